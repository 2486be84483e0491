"""What a learner can read on an executed chapter page, and the answers to look for in it.

Used by the page-leak test. ``page_texts`` executes a learner notebook in a fresh kernel
and returns every piece of text the page shows: stream and rich outputs, the text of every
matplotlib figure the chapter drew (titles, labels, tick labels, legends, annotations,
found by hooking figure creation, since explorers close their figures after drawing them),
and the visible widgets (HTML values, labels, descriptions, slider readouts, the outputs of
Output widgets), walked from the widgets each cell displayed and skipping anything hidden
with ``display: none`` (an explorer's covered verdicts).

``answer_forms`` renders an expected answer the way a page might print it: in its own unit,
in the neighbouring decimal prefixes (1.75 GB as 1750 MB), as a fraction or a percentage,
and ``shows`` decides whether a printed number is that answer at the precision it is printed.
"""

from __future__ import annotations

import html
import json
import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

import nbformat
from nbclient import NotebookClient

from autograder.unit_table import (
    COUNT_PREFIX,
    MONEY,
    RATIO,
    TIME,
    Unit,
    count_unit,
    lookup,
    target_unit,
)

MARK = "DTW-FIGURE-TEXT:"
HOOK = """\
import matplotlib.figure as _dtw_mf
_dtw_figures = []
_dtw_init = _dtw_mf.Figure.__init__
def _dtw_hooked(self, *args, **kwargs):
    _dtw_init(self, *args, **kwargs)
    _dtw_figures.append(self)
_dtw_mf.Figure.__init__ = _dtw_hooked
"""
COLLECT = """\
import json as _dtw_json
import matplotlib.text as _dtw_text
_dtw_found, _dtw_ticks = [], []
for _dtw_fig in _dtw_figures:
    try:
        _dtw_fig.canvas.draw()  # tick labels are made at draw time
    except Exception:
        pass
    _dtw_tick_ids = {id(t) for ax in _dtw_fig.axes for axis in (ax.xaxis, ax.yaxis)
                     for t in axis.get_ticklabels(which="both")}
    for _dtw_t in _dtw_fig.findobj(_dtw_text.Text):
        if _dtw_t.get_visible() and _dtw_t.get_text().strip():
            (_dtw_ticks if id(_dtw_t) in _dtw_tick_ids else _dtw_found).append(_dtw_t.get_text())
print(_DTW_MARK + _dtw_json.dumps([_dtw_found, _dtw_ticks]))
""".replace("_DTW_MARK", repr(MARK))


def execute(path: Path, workdir: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` run top to bottom, with the figure hook around it."""
    nb: nbformat.NotebookNode = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(HOOK))
    nb.cells.append(nbformat.v4.new_code_cell(COLLECT))
    client = NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return nb


def _widget_states(nb: nbformat.NotebookNode) -> dict[str, dict[str, Any]]:
    stored = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    return {key: value.get("state", {}) for key, value in stored.get("state", {}).items()}


def _ref(value: Any) -> str | None:
    if isinstance(value, str) and value.startswith("IPY_MODEL_"):
        return value[len("IPY_MODEL_"):]
    return None


def _output_texts(output: dict[str, Any], states: dict[str, dict[str, Any]],
                  seen: set[str]) -> list[str]:
    """The text of one output (of a cell or of an Output widget), widgets included."""
    if output.get("output_type") == "stream":
        return [str(output.get("text", ""))]
    data = output.get("data", {})
    view = data.get("application/vnd.jupyter.widget-view+json")
    if view:
        return _widget_texts(view["model_id"], states, seen)
    return [str(data[kind]) for kind in ("text/html", "text/markdown", "text/plain")
            if kind in data][:1]  # a front end shows one of them: the richest


def _hidden(state: dict[str, Any], states: dict[str, dict[str, Any]]) -> bool:
    layout = states.get(_ref(state.get("layout")) or "", {})
    return layout.get("display") == "none" or layout.get("visibility") == "hidden"


def _widget_texts(model_id: str, states: dict[str, dict[str, Any]], seen: set[str]) -> list[str]:
    """The visible text of a widget and of everything inside it."""
    if model_id in seen or model_id not in states:
        return []
    seen.add(model_id)
    state = states[model_id]
    if _hidden(state, states):
        return []
    texts = [str(state.get(name)) for name in ("description", "placeholder", "value",
                                               "tooltip", "readout_format")
             if isinstance(state.get(name), (str, int, float)) and name != "readout_format"]
    labels = state.get("_options_labels")
    index = state.get("index")
    if isinstance(labels, list):  # a selection shows its chosen label (a slider's readout)
        chosen = [labels[index]] if isinstance(index, int) and index < len(labels) else []
        texts += labels if state.get("_model_name") in ("DropdownModel", "ToggleButtonsModel",
                                                        "RadioButtonsModel") else chosen
    for child in state.get("children", []):
        ref = _ref(child)
        if ref:
            texts += _widget_texts(ref, states, seen)
    for output in state.get("outputs", []):
        texts += _output_texts(output, states, seen)
    return texts


class Page(NamedTuple):
    """What an executed page shows: text outputs and visible widgets (as the raw HTML or
    text), figure texts (titles, labels, legends, annotations), figure tick labels, and
    the markdown cells (prose, captions and prompts, as read: see :func:`prose`)."""

    texts: list[str]
    figures: list[str]
    ticks: list[str]
    errors: list[str]  # a page that stopped early would hide what comes after
    prose: list[str]

    def worded_ticks(self) -> list[str]:
        """The tick labels that are words, not an axis's scale ("FP16 (1-5-10)", not
        "1e-40"): a category's label can carry a readout."""
        return [t for t in self.ticks if re.search(r"[A-Za-z]{2,}", t)]


def page_texts(nb: Any) -> Page:
    """Everything an executed page shows (see :class:`Page`)."""
    states: dict[str, dict[str, Any]] = _widget_states(nb)
    seen: set[str] = set()
    page = Page([], [], [], [], [])
    for cell in nb.cells:
        if cell.get("cell_type") == "markdown":  # the prose, captions and every prompt
            page.prose.append(prose(str(cell.get("source", ""))))
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                page.errors.append(f"{output.get('ename')}: {output.get('evalue')}")
            for text in _output_texts(output, states, seen):
                if text.startswith(MARK):
                    figures, ticks = json.loads(text[len(MARK):])
                    page.figures.extend(figures)
                    page.ticks.extend(ticks)
                else:
                    page.texts.append(text)
    return page


_MATH_DOLLAR = re.compile(r"(?<!\\)\$+")


def prose(markdown: str) -> str:
    """A markdown cell as read: math delimiters ("$k = 64$") dropped, "\\$" read as a
    dollar sign, thin spaces ("16{,}384") and LaTeX spacing joined."""
    text = _MATH_DOLLAR.sub(" ", markdown).replace("\\$", "$").replace("{,}", ",")
    return re.sub(r"\\[,;!]", " ", text)


_TAG = re.compile(r"<(script|style)\b.*?</\1>|<[^>]*>", re.DOTALL | re.IGNORECASE)
_NARRATION_LENGTH = re.compile(r"\(about [^()]*\bwords\)")  # a player's "(about 56 s, 141 words)"
_EXERCISE_ID = re.compile(r"\b(?:[Ee]xercises?|[Cc]hapter) \d+(?:\.\d+)?(?:\s*(?:,|and|-|to|–)\s*"
                          r"\d+(?:\.\d+)?)*")


def readable(text: str) -> str:
    """What a reader sees of ``text``: tags and attributes dropped, entities decoded,
    numbers spelled out for the ear written in digits ("sixty-eight point six" -> 68.6),
    exercise numbers ("exercise 1.6") removed (they are names, not quantities)."""
    visible = html.unescape(_TAG.sub(" ", text))
    return _EXERCISE_ID.sub(" ", _NARRATION_LENGTH.sub(" ", spelled_to_digits(visible)))


_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 10**9}
_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True))
_SPELLED = re.compile(
    rf"\b(?:{_WORD})(?:(?:[ -]|\s+and\s+)(?:{_WORD}))*"
    rf"(?:\s+point(?:\s+(?:{'|'.join(_UNITS)}))+)?\b", re.IGNORECASE)


def _spelled_value(words: str) -> str:
    """"one hundred and twenty-eight" -> "128"; "sixty-eight point six" -> "68.6"; two
    numbers said one after the other ("two thirty-two bit moments") stay two."""
    whole, _, fraction = words.lower().partition(" point ")
    numbers: list[int] = []
    total, current, last = 0, 0, ""
    for word in re.split(r"[\s-]+", whole.replace(" and ", " ")):
        small = word in _UNITS or word in _TENS
        follows_tens = last in _TENS and word in _UNITS and 0 < _UNITS[word] < 10
        if small and last and (last in _UNITS or last in _TENS) and not follows_tens:
            numbers.append(total + current)  # a new number starts
            total, current = 0, 0
        if small:
            current += _UNITS.get(word, 0) + _TENS.get(word, 0)
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word in _SCALES:
            total += max(current, 1) * _SCALES[word]
            current = 0
        last = word
    numbers.append(total + current)
    digits = " ".join(str(n) for n in numbers)
    if fraction:
        digits += "." + "".join(str(_UNITS[w]) for w in fraction.split() if w in _UNITS)
    return digits


def spelled_to_digits(text: str) -> str:
    """``text`` with every number spelled out in words written in digits (narration is
    written for the ear: "ninety-eight seconds" is 98 s). A lone "one" or "a" is left."""
    def digits(match: re.Match[str]) -> str:
        words = match.group()
        if words.lower() in ("one", "zero", *_SCALES):  # "billion" alone scales a number
            return words
        return _spelled_value(words)
    return _SPELLED.sub(digits, text)


# -- the answers, in the forms a page might print them ------------------------------------

NUMBER = re.compile(r"(?<![\w.])-?\d(?:[\d,]*\d)?(?:\.\d+)?(?:[eE][-+]?\d+)?")
PREFIX_STEPS = (1.0, 1e3, 1e-3, 1e6, 1e-6)
TIME_UNITS_S = (1e-6, 1e-3, 1.0, 60.0, 3600.0, 86400.0)


def answer_forms(value: float, unit: str) -> list[float]:
    """``value`` in ``unit`` as a page might print it: in this unit or another of its family
    (1.75 GB as 1750 MB, 98 s as 1.6 min, $1.06M as 1.06), a fraction as a percentage."""
    target = target_unit(unit)
    if target.family == TIME:
        seconds = value * target.factor
        forms = [seconds / factor for factor in TIME_UNITS_S]
    elif target.family == MONEY:
        forms = [value, value / 1e3, value / 1e6, value / 1e9]
    elif target.family == RATIO:
        forms = [value, value * 100 if target.symbol != "%" else value / 100]
    elif target.family.startswith(COUNT_PREFIX):
        forms = [value, value / 1e3, value / 1e6]  # "8,000 steps" as "8k"
    else:  # sizes, bandwidths, FLOPs, power, energy: the decimal prefixes
        forms = [value * step for step in PREFIX_STEPS]
    return [f for f in forms if f != 0]


def _significant(token: str) -> int:
    digits = token.lstrip("-").replace(",", "").split("e")[0].split("E")[0].replace(".", "")
    return len(digits.lstrip("0"))


def shows(token: str, form: float) -> bool:
    """Whether the printed ``token`` is ``form`` at the precision it is printed with, and
    precise enough to give the answer away: two significant digits or more, or decimals
    ("0.6"), and within 3 % of it; a lone digit ("2 GB") or zero is too coarse."""
    if _significant(token) < 2 and "." not in token:
        return False
    text = token.replace(",", "")
    printed = Decimal(text)
    if printed == 0 or abs(float(printed) - form) > 0.03 * abs(form):
        return False
    exponent = printed.as_tuple().exponent
    if not isinstance(exponent, int):
        return False
    quantum = Decimal(1).scaleb(exponent)
    exact = Decimal(repr(form))
    for rounding in (ROUND_HALF_UP, ROUND_HALF_EVEN):
        try:
            if exact.quantize(quantum, rounding=rounding) == printed:
                return True
        except InvalidOperation:  # more digits than a Decimal holds: not a printed form
            return False
    return abs(float(printed) - form) <= 1e-3 * abs(form)


_WORD_AFTER = re.compile(r"[ \t]*([A-Za-zµμ$%][\w/$%-]*)")


def _unit_after(text: str, end: int) -> Unit | None:
    """What is written right after position ``end``: a unit ("98 GB" -> GB), a counting
    word ("128 query heads" -> count:query), or None (nothing)."""
    match = _WORD_AFTER.match(text, end)
    if not match or match.group(1).lower() in _SCALES:  # "3.2 billion": a number's size
        return None
    meanings, _ = lookup(match.group(1))
    return meanings[0] if meanings else count_unit(match.group(1))


_ASSIGNED = re.compile(r"[=:]\s*\$?\s*$")
_POWER = re.compile(r"(?<![\w.])(?P<base>\d+(?:\.\d+)?)\s*(?:\\times|x|×|\*)?\s*"
                    r"(?:(?P<ten>10)\s*)?(?:\^|\*\*)\s*\{?\s*(?P<exp>[-+−]?\d+)\s*\}?")


def _powers(text: str) -> list[tuple[str, float]]:
    """Numbers written with an exponent: "2^{-14}", "2**-14", "6.10 \\times 10^{-5}",
    "6.10 x 10^-5", as (text, value)."""
    found = []
    for match in _POWER.finditer(text):
        base, exponent = float(match["base"]), int(match["exp"].replace("−", "-"))
        try:
            value = base * 10.0**exponent if match["ten"] else base**exponent
        except OverflowError:
            continue
        found.append((match.group().strip(), value))
    return found


def _counted_later(text: str, end: int, family: str) -> bool:
    """Whether the answer's counting word comes within the next three words ("64
    accumulation steps" counts steps)."""
    if not family.startswith(COUNT_PREFIX):
        return False
    words = re.findall(r"[A-Za-z]+", text[end:end + 60])[:3]
    return any(count_unit(word).family == family for word in words)


def found_in(text: str, forms: list[float], family: str = "",
             answer: tuple[float, str] | None = None) -> list[str]:
    """The numbers in ``text`` that print one of ``forms``: not one written with a unit or
    a counting word of another family than the answer's ``family`` ("98 GB" is not the
    answer "98 s", "128 query heads" not a data-parallel degree of 128), and not a bare
    two-digit whole number ("a TP group of 16"), which says too little on its own unless it
    is assigned ("k = 64"). Powers ("2^{-14}", "6.10 x 10^-5") are read as their value.
    Given the ``answer`` (value, unit), a number written with a unit of its family is
    compared in that unit only ("98 min" is not the answer "98 s")."""
    found = []
    for match in NUMBER.finditer(text):
        token = match.group()
        unit = _unit_after(text, match.end())
        written = None if unit is None else unit.family
        if written is not None and family and written != family \
                and not _counted_later(text, match.end(), family):
            continue
        candidates = forms
        if answer is not None and unit is not None and written == family \
                and not family.startswith(COUNT_PREFIX):
            candidates = [answer[0] * target_unit(answer[1]).factor / unit.factor]
        assigned = (family in (RATIO, "") or family.startswith(COUNT_PREFIX)) and \
            _ASSIGNED.search(text[max(0, match.start() - 4):match.start()]) is not None
        if written is None and "." not in token and _significant(token) < 3 and not assigned:
            continue
        if any(shows(token, f) for f in candidates):
            found.append(token)
    for written, value in _powers(text):
        if any(abs(value - f) <= 0.005 * abs(f) for f in forms):
            found.append(written)
    return found


def unescaped_dollars(text: str) -> int:
    """Dollar signs a typesetter would read as math delimiters (matplotlib's own
    ``$\\mathdefault{10^{3}}$`` tick labels are math on purpose and not counted)."""
    if "\\mathdefault" in text:
        return 0
    return len(re.findall(r"(?<!\\)\$", text))
