// Narrow screens show tables of three or more columns as cards (see extra.css): each cell then names its column,
// taken from the table's header row. Two-column tables (property and value) stay tables; they fit. `document$`
// is the theme's page-load stream, so this also runs after instant navigation.
document$.subscribe(function () {
  document.querySelectorAll(".md-typeset table:not([class])").forEach(function (table) {
    var headers = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
      return th.textContent.trim();
    });
    if (headers.length > 2) {
      table.setAttribute("data-cards", "");
    }
    table.querySelectorAll("tbody tr").forEach(function (row) {
      Array.prototype.forEach.call(row.children, function (cell, index) {
        if (headers[index]) {
          cell.setAttribute("data-label", headers[index]);
        }
      });
    });
  });
});
