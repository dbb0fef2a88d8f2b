// The search field, read the way a reader means it. The theme reads the query from the field's `value` and
// makes every word a prefix, so two things would go wrong; for this one field, what it reads is adjusted (the
// reader still sees what they typed):
// - Error codes are negative numbers, but to the search engine a leading minus means "pages without this word",
//   so a search for -32602 would list every page except the ones that name the code. A minus right before a digit
//   is dropped (the index holds codes without it).
// - A one-letter word ("may I resend") becomes a prefix of nearly every word and ranks pages that only start
//   words with that letter; it is left out when the query has longer words.
// The theme's suggestion (grey text completing the query inside the field) is built from what it reads, so when
// that differs from what was typed it would be drawn over the typed text ("32602" over "-32602"): it is cleared then.
(() => {
  const field = document.querySelector("input.md-search__input");
  const own = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value");
  if (!field || !own) return;
  const meant = (typed) => {
    const words = typed.replace(/(^|\s)-(?=\d)/g, "$1").split(/(\s+)/);
    const long = words.some((word) => word.trim().length > 1);
    return long ? words.map((word) => (/^\w$/.test(word) ? "" : word)).join("") : words.join("");
  };
  Object.defineProperty(field, "value", {
    configurable: true,
    get() {
      return meant(own.get.call(this));
    },
    set(text) {
      own.set.call(this, text);
    },
  });
  const suggest = document.querySelector(".md-search__suggest");
  if (!suggest) return;
  new MutationObserver(() => {
    const typed = own.get.call(field);
    if (suggest.textContent !== "" && meant(typed) !== typed) suggest.textContent = "";
  }).observe(suggest, { childList: true, characterData: true, subtree: true });
})();
