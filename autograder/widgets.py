"""An ipywidgets front end for one exercise, built on the API common to ipywidgets 7.7 and 8.

Only Text, IntText, RadioButtons, Dropdown, Button, HTML, Label, HBox, VBox and Layout
are used, with properties both versions share; no custom front-end code. Right and wrong
are announced in words and symbols, never by colour alone. What a button produces is set
as the value of the card's HTML output: a callback sends widget state and never kernel
output, so no front end can file feedback in its log console instead of on the card.
"""

from __future__ import annotations

import ast
import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from autograder.exercise import Exercise
from autograder.kinds import (
    Choice,
    Constraints,
    Debug,
    Function,
    Lab,
    Numeric,
    Ordering,
    Trace,
)
from autograder.kinds.base import AnswerKind
from autograder.markup import inline_markdown, plain_text

ReadAnswer = Callable[[], Any]
WriteAnswer = Callable[[Any], None]
Input = tuple[Any, ReadAnswer, WriteAnswer]
Lookup = Callable[[str], Any]
# (kind, record, lookup) -> the input widget with a reader and a writer for it.
InputFactory = Callable[[Any, Exercise, Lookup], Input]

_INPUTS: dict[type[AnswerKind], InputFactory] = {}
F = TypeVar("F", bound=InputFactory)


def input_for(kind_type: type[AnswerKind]) -> Callable[[F], F]:
    """Register the input widget of an answer kind (a decorator)."""
    def register(factory: F) -> F:
        _INPUTS[kind_type] = factory
        return factory
    return register


@dataclass
class Actions:
    """What the buttons do; supplied by the caller so this module knows no store."""

    check: Callable[[Any, Any], Any]       # (answer, params shown or None) -> a result
    hint: Callable[[Any], Any]             # params shown or None -> the next hint
    solution: Callable[[Any], Any]         # params shown or None -> the worked solution
    variant: Callable[[], Any]             # -> a practice object with .params and .prompt
    lookup: Callable[[str], Any]           # name -> object in the learner's namespace


OUTPUT_CLASS = "dtw-card-output"


def shown_html(value: Any) -> str:
    """What a notebook would show for ``value``, as HTML: its own ``_repr_html_``, else its
    text, escaped and kept as written."""
    rich = getattr(value, "_repr_html_", None)
    shown = rich() if callable(rich) else None
    if isinstance(shown, str):
        return shown
    return f'<pre style="white-space:pre-wrap">{html.escape(str(value))}</pre>'


PRINTED = "Answer the question printed above, or press Try a variant for new numbers."
PRINTED_ONLY = "Answer the question printed above."
VARIANT_SHOWN = ("New numbers, in the question above: Check, Hint and Show solution now "
                 "use them.")


def _prompt_html(record: Exercise, prompt: str | None, note: str = "",
                 can_vary: bool = True) -> str:
    """The card's header; the question itself only for a variant (the printed question is
    in the markdown cell above the card, so the page shows each prompt once)."""
    printed = PRINTED if can_vary else PRINTED_ONLY
    body = f"<em>{html.escape(printed)}</em>" if prompt is None else (
        "<strong>Your variant:</strong> " + inline_markdown(prompt))
    extra = f" <em>{html.escape(note)}</em>" if note else ""
    return (f"<div><strong>Exercise {html.escape(record.id)}: {html.escape(record.title)}"
            f"</strong> <em>({record.category})</em>{extra}<p>{body}</p></div>")


@input_for(Numeric)
def _numeric_input(kind: Numeric, record: Exercise, lookup: Lookup) -> Input:
    import ipywidgets as w

    words = f"your answer in {kind.unit}" if kind.unit else "your answer, a plain number"
    box = w.Text(placeholder=words, description="Answer:",
                 layout=w.Layout(width="auto", max_width="100%"))

    def write(value: Any) -> None:
        box.value = str(value)

    input_box = w.HBox([box, w.Label(kind.unit)], layout=w.Layout(flex_flow="row wrap"))
    input_box.submit_box = box  # Enter in it submits (see ExerciseWidget)
    return input_box, lambda: box.value, write


@input_for(Choice)
def _choice_input(kind: Choice, record: Exercise, lookup: Lookup) -> Input:
    """Radio buttons labelled with the options as filled for the numbers shown (a question
    pool deals its options per variant); ``refresh`` relabels them for a variant."""
    import ipywidgets as w

    radio = w.RadioButtons(options=choice_labels(kind, record.params), value=None,
                           layout=w.Layout(width="auto"))

    def read() -> Any:
        return None if radio.value is None else radio.value.split(".", 1)[0]

    def write(key: Any) -> None:
        radio.value = next(label for label in radio.options if label.split(".", 1)[0] == key)

    def refresh(params: Any) -> None:
        radio.value = None
        radio.options = choice_labels(kind, params)

    radio.refresh = refresh
    return radio, read, write


def choice_labels(kind: Choice, params: Any) -> list[str]:
    """"A. <text>" for every option filled from ``params``, as plain text (a radio button's
    label does not render markdown)."""
    return [f"{o.key}. {' '.join(plain_text(o.text).split())}" for o in kind.options_for(params)]


@input_for(Ordering)
def _ordering_input(kind: Ordering, record: Exercise, lookup: Lookup) -> Input:
    import ipywidgets as w

    slots = [w.Dropdown(options=["(choose)", *kind.items], value="(choose)",
                        description=f"{i + 1}.") for i in range(len(kind.items))]
    header = w.Label(f"From {kind.first_label} (1) to {kind.last_label} ({len(slots)}):")

    def read() -> Any:
        values = [s.value for s in slots]
        return None if "(choose)" in values else values

    def write(order: Any) -> None:
        for slot, item in zip(slots, order, strict=False):
            slot.value = item

    return w.VBox([header, *slots]), read, write


@input_for(Trace)
def _trace_input(kind: Trace, record: Exercise, lookup: Lookup) -> Input:
    import ipywidgets as w

    rows = len(record.expected())
    # the boxes give way in a narrow notebook; the step label keeps its full width
    cells = [[w.Text(placeholder=c, layout=w.Layout(width="9em", min_width="4em",
                                                     flex="0 1 9em")) for c in kind.columns]
             for _ in range(rows)]
    lines = [w.HBox([w.Label(f"{kind.step_label} {i + 1}:",
                             layout=w.Layout(flex="0 0 auto", min_width="max-content")), *row])
             for i, row in enumerate(cells)]

    def read() -> Any:
        values = [[c.value for c in row] for row in cells]
        return [row[0] if len(row) == 1 else tuple(row) for row in values]

    def write(table: Any) -> None:
        for row_boxes, row in zip(cells, table, strict=False):
            values = row if isinstance(row, (list, tuple)) else [row]
            for box, value in zip(row_boxes, values, strict=False):
                box.value = str(value)

    return w.VBox(lines), read, write


@input_for(Debug)
def _debug_input(kind: Debug, record: Exercise, lookup: Lookup) -> Input:
    import ipywidgets as w

    def labels(params: Any) -> list[str]:
        lines = kind.code_for(params).rstrip("\n").split("\n")
        return [f"line {i + 1}: {line.strip()}" for i, line in enumerate(lines)]

    radio = w.RadioButtons(options=labels(record.params), value=None,
                           layout=w.Layout(width="auto"))
    note = w.HTML(f"<p>Click the buggy line, then define <code>{kind.fix.function_name}</code>"
                  " (fixed) in a code cell and press Check.</p>")

    def read() -> Any:
        if radio.value is None:
            return None
        line = int(radio.value.split(":", 1)[0].split()[1])
        fixed = lookup(kind.fix.function_name)
        return line if fixed is None else (line, fixed)

    def write(answer: Any) -> None:
        line = answer[0] if isinstance(answer, (list, tuple)) else answer
        radio.value = radio.options[int(line) - 1]

    def refresh(params: Any) -> None:  # a variant may show another program
        radio.value = None
        radio.options = labels(params)

    box = w.VBox([radio, note])
    box.refresh = refresh
    return box, read, write


@input_for(Function)
def _function_input(kind: Function, record: Exercise, lookup: Lookup) -> Input:
    import ipywidgets as w

    note = w.HTML(f"<p>Define <code>def {html.escape(kind.function_name)}"
                  f"{html.escape(kind.signature)}</code> in a code cell, run it, then press "
                  "Check.</p>")
    return note, lambda: lookup(kind.function_name), lambda _: None  # defined in a cell


@input_for(Lab)
def _lab_input(kind: Lab, record: Exercise, lookup: Lookup) -> Input:
    import ipywidgets as w

    note = w.HTML(f"<p>Write <code>def {html.escape(kind.function_name)}"
                  f"{html.escape(kind.signature)}</code> in the answer cell, run it, then press "
                  "Check: it runs on the simulated cluster and the result shows your "
                  "trace.</p>")
    return note, lambda: lookup(kind.function_name), lambda _: None  # defined in a cell


@input_for(Constraints)
def _constraints_input(kind: Constraints, record: Exercise, lookup: Lookup) -> Input:
    import ipywidgets as w

    boxes = {f: w.IntText(value=0, description=f"{f}:", style={"description_width": "initial"},
                          layout=w.Layout(width="12em")) for f in kind.fields}

    def write(answer: Any) -> None:
        for field, box in boxes.items():
            box.value = int(answer[field])

    return (w.HBox(list(boxes.values()), layout=w.Layout(flex_flow="row wrap")),
            lambda: {f: b.value for f, b in boxes.items()}, write)


def _literal_input(kind: AnswerKind, record: Exercise, lookup: Lookup) -> Input:
    """For a kind with no input of its own: a text box read as a Python literal."""
    import ipywidgets as w

    box = w.Text(placeholder=kind.describe(), description="Answer:",
                 layout=w.Layout(width="auto"))

    def read() -> Any:
        try:
            return ast.literal_eval(box.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return box.value  # the kind explains what it expected

    def write(value: Any) -> None:
        box.value = repr(value)

    return box, read, write


def answer_input(record: Exercise, lookup: Lookup) -> Input:
    """The input widget registered for the record's answer kind (or for the nearest base
    class), a reader and a writer for it; a literal text box for a kind with none."""
    kind = record.answer_kind
    factory = next((_INPUTS[cls] for cls in type(kind).__mro__ if cls in _INPUTS),
                   _literal_input)
    return factory(kind, record, lookup)


class ExerciseWidget:
    """Header, input, Check / Hint / Show solution / Try a variant, the hint ladder and an
    output area. The card keeps one state: the numbers it shows (``params``, None for the
    printed ones) are the numbers every Check, Hint and solution uses."""

    def __init__(self, record: Exercise, actions: Actions, note: str = "",
                 can_vary: bool = True) -> None:
        """``can_vary``: whether the question has numbers a variant changes; without them
        the card offers no "Try a variant" (it would have nothing to show)."""
        import ipywidgets as w

        self.record = record
        self.actions = actions
        self.note = note
        self.params: dict[str, Any] | None = None  # None: the printed question
        self.prompt = w.HTML(_prompt_html(record, None, note, can_vary))
        self.input, self.read, self.write = answer_input(record, actions.lookup)
        self.last: Any = None  # what the output area shows now
        wide = w.Layout(width="auto")
        self.buttons = {
            "check": w.Button(description="Check", button_style="primary", layout=wide),
            "hint": w.Button(description="Hint", layout=wide),
            "solution": w.Button(description="Show solution", layout=wide),
            "variant": w.Button(description="Try a variant", layout=wide),
        }
        self.ladder = w.VBox()  # every hint seen on this card, oldest first
        self.output = w.HTML()
        self.output.add_class(OUTPUT_CLASS)
        self.buttons["check"].on_click(lambda _: self.check())
        self.buttons["hint"].on_click(lambda _: self._guarded(self._hint))
        self.buttons["solution"].on_click(
            lambda _: self._show(lambda: actions.solution(self.params)))
        self.buttons["variant"].on_click(lambda _: self._guarded(self._variant))
        submit = getattr(self.input, "submit_box", None)
        if submit is not None:
            _on_enter(submit, self.check)
        if not can_vary:
            self.buttons["variant"].disabled = True
            self.buttons["variant"].layout.display = "none"
        self.box = w.VBox([self.prompt, self.input,
                           w.HBox(list(self.buttons.values()),
                                  layout=w.Layout(flex_flow="row wrap")),
                           self.ladder, self.output], layout=w.Layout(width="100%"))

    def check(self) -> None:
        self._show(lambda: self.actions.check(self.read(), self.params))

    def _show(self, produce: Callable[[], Any]) -> None:
        try:
            self.last = produce()
        except Exception as exc:  # an error lands on the card, never in the log console
            self.last = _Message(f"{type(exc).__name__}: {exc}")
        self.output.value = shown_html(self.last)

    def _guarded(self, action: Callable[[], None]) -> None:
        try:
            action()
        except ValueError as exc:
            message = _Message(str(exc))
            self._show(lambda: message)

    def _hint(self) -> None:
        import ipywidgets as w

        text = self.actions.hint(self.params)
        rung = w.HTML(shown_html(text))
        self.ladder.children = (*self.ladder.children, rung)
        self.last = text

    def _variant(self) -> None:
        practice = self.actions.variant()
        self.params = dict(practice.params)
        self.prompt.value = _prompt_html(self.record, practice.prompt, self.note)
        self.ladder.children = ()  # hints belong to the numbers they were given for
        refresh = getattr(self.input, "refresh", None)
        if refresh is not None:  # inputs that show the question's numbers (dealt options)
            refresh(self.params)
        shown = _Message(VARIANT_SHOWN)  # the question is in the header, shown once
        self._show(lambda: shown)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)


@dataclass(frozen=True)
class _Message:
    """A plain sentence shown on the card."""

    text: str

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f'<p role="status">{html.escape(self.text)}</p>'


def _on_enter(box: Any, submit: Callable[[], None]) -> None:
    """Call ``submit`` when Enter is pressed in a Text box (ipywidgets 7 and 8)."""
    import warnings

    with warnings.catch_warnings():  # deprecated in 8 in favour of observe, which fires on blur
        warnings.simplefilter("ignore", DeprecationWarning)
        box.on_submit(lambda _: submit())
