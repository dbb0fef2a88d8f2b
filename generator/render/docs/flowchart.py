"""The resend decision as a mermaid flowchart, drawn from the spec's decisions so it cannot disagree with them.

One branch per failure kind. A failure whose decision is the same for every class ends in that decision; one
that depends on the class branches per class; one decided by error code branches per group of codes that decide
alike, and each group then ends in one decision or branches per class.
"""

from __future__ import annotations

from ...model.spec import ErrorRule, Spec

# What each decision tells the SDK to do; the decision vocabulary is fixed (semantics.KNOWN_DECISIONS).
OUTCOMES = {
    "always": "Resend as is,<br/>new id",
    "with-key": "Resend with the<br/>same key, new id",
    "opt-in": "Resend; it may<br/>duplicate",
    "never": "Never resend;<br/>report it",
}
UNKNOWN = "Report: outcome<br/>unknown"
QUESTIONS = {"with-key": ("Has a key?", UNKNOWN), "opt-in": ("Caller<br/>opted in?", UNKNOWN)}


class _Chart:
    """Mermaid lines, with one node per distinct outcome and per distinct class question, so that branches that
    end alike share their ending and the chart stays narrow enough to draw at full size."""

    def __init__(self) -> None:
        # useMaxWidth off: the chart keeps its natural size, so labels are never scaled below their font size.
        self.lines = [
            "---",
            "config:",
            "  flowchart:",
            "    useMaxWidth: false",
            "    nodeSpacing: 10",
            "    rankSpacing: 30",
            "---",
            "flowchart TD",
            "    start([Attempt failed]) --> kind{How did<br/>it fail?}",
        ]
        self.count = 0
        self.shared: dict[object, str] = {}

    def node(self, shape: str, label: str, key: object = None) -> str:
        """A new node, or the one already made for `key`."""
        if key is not None and key in self.shared:
            return self.shared[key]
        self.count += 1
        name = f"n{self.count}"
        opening, closing = {"box": ("[", "]"), "ask": ("{", "}")}[shape]
        self.lines.append(f'    {name}{opening}"{label}"{closing}')
        if key is not None:
            self.shared[key] = name
        return name

    def edge(self, source: str, target: str, label: str) -> None:
        self.lines.append(f'    {source} -- "{label}" --> {target}')

    def outcome(self, decision: str) -> str:
        """The node for a decision: a plain outcome, or a question with two outcomes for conditional ones."""
        if decision not in QUESTIONS:
            return self.node("box", OUTCOMES[decision], ("outcome", decision))
        if ("ask", decision) in self.shared:
            return self.shared[("ask", decision)]
        question, refusal = QUESTIONS[decision]
        ask = self.node("ask", question, ("ask", decision))
        self.edge(ask, self.node("box", OUTCOMES[decision], ("outcome", decision)), "yes")
        self.edge(ask, self.node("box", refusal, ("refusal", refusal)), "no")
        return ask

    def by_class(self, source: str, label: str, decisions: tuple[tuple[str, str], ...]) -> None:
        """An edge to one outcome when every class decides alike, else to a question on the class."""
        if len({d for _, d in decisions}) == 1:
            self.edge(source, self.outcome(decisions[0][1]), label)
            return
        known = ("class", decisions) in self.shared
        ask = self.node("ask", "Retry class?", ("class", decisions))
        self.edge(source, ask, label)
        if not known:
            for class_name, decision in decisions:
                self.edge(ask, self.outcome(decision), class_name)


def _codes(rules: tuple[ErrorRule, ...]) -> str:
    named = [str(r.code) for r in rules if r.code is not None]
    other = ["other codes" for r in rules if r.code is None]
    shown = named[:3] + (["…"] if len(named) > 3 else []) + other
    return ",<br/>".join(shown)


def flowchart(spec: Spec) -> str:
    """Mermaid source for the resend decision of `spec`."""
    chart = _Chart()
    for failure in spec.failure_kinds:
        label = failure.title.lower()
        if not failure.by_error_code:
            chart.by_class("kind", label, tuple((c.name, c.decision(failure.name)) for c in spec.classes))
            continue
        # The same rule as the SDK page and the Resender: "already done" counts only after an attempt went unanswered.
        ask = chart.node("ask", "An earlier attempt<br/>unanswered, and the<br/>code listed as done?")
        chart.edge("kind", ask, label)
        chart.edge(ask, chart.node("box", "Report success"), "yes")
        code = chart.node("ask", "Error code?")
        chart.edge(ask, code, "no")
        for rules, decisions in spec.decision_groups():
            chart.by_class(code, _codes(rules), decisions)
    return "\n".join(chart.lines)
