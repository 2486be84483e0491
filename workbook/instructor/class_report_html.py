"""``class_report.html``: the class report as one self-contained page with figures.

No script, no font, no image file and no request: the figures are inline SVG drawn here.
Colours are CSS variables with a light and a dark set (``prefers-color-scheme``); SVG text
takes ``currentColor`` and bars take the variables, so a figure follows the reader's
theme. Every figure has a title and a description for a screen reader, and a table beside
it holds the same numbers. Every string is HTML-escaped: student ids and exercise titles
are text the page does not trust.

The page names no student except those in the hand-in who are not on the roster.
"""

from __future__ import annotations

from pathlib import Path

from autograder.grading.feedback import escape
from autograder.grading.private_files import write_private
from workbook.instructor.class_report import (
    BINS,
    CSV_NAME,
    HTML_NAME,
    ClassReport,
    ExerciseStats,
    number,
    write_csv,
)

WIDTH = 720          # every figure's viewBox width; it scales down with the page
LABEL_CHARS = 34     # an exercise's label beside its bar (the table has the whole title)
MISTAKE_CHARS = 92   # a known mistake's label above its bar
MOST_MISTAKES = 15   # bars in the misconception figure; the table lists every one

_STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #505861;
        --bar: #0969da; --mistake: #9a4d00; --rule: #d0d7de; --band: #f6f8fa; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #a5aeb8; --bar: #4493f8;
          --mistake: #e3a341; --rule: #3d444d; --band: #161b22; }
}
html { background: var(--bg); color: var(--fg); }
body { font-family: system-ui, sans-serif; line-height: 1.5; max-width: 52rem;
       margin: 1.5rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; }
figure { margin: 1rem 0; } figcaption { color: var(--muted); }
svg { display: block; width: 100%; height: auto; color: var(--fg); }
svg .bar { fill: var(--bar); } svg .mistake { fill: var(--mistake); }
svg .axis { stroke: var(--muted); } svg .grid { stroke: var(--rule); }
svg .muted { fill: var(--muted); }
table { border-collapse: collapse; margin: 0.8rem 0; width: 100%; font-size: 0.92rem; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3rem; }
th, td { border-bottom: 1px solid var(--rule); padding: 0.25rem 0.35rem; text-align: left;
         vertical-align: top; overflow-wrap: break-word; }
td:first-child { min-width: 8rem; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.n { white-space: nowrap; }
p.note { overflow-wrap: anywhere; }
tbody tr:nth-child(even) { background: var(--band); }
.note { color: var(--muted); }
"""


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _percent(share: float) -> str:
    return f"{round(share * 100)} %"


def _svg(name: str, height: float, title: str, desc: str, body: list[str]) -> str:
    return (f'<svg viewBox="0 0 {WIDTH} {height:.0f}" role="img" '
            f'aria-labelledby="{name}-t {name}-d" font-size="13">'
            f'<title id="{name}-t">{escape(title)}</title>'
            f'<desc id="{name}-d">{escape(desc)}</desc>' + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="currentColor"'
            f"{klass}>{escape(text)}</text>")


def _bin_label(index: int) -> str:
    step = 100 // BINS
    low = index * step
    return f"{low}–{low + step} %" if index == BINS - 1 else f"{low}–{low + step - 1} %"


# --- the figures ---------------------------------------------------------------------------

def histogram(report: ClassReport) -> str:
    """Students per tenth of the maximum score, as vertical bars with their counts."""
    bins = report.score_bins()
    top = max(max(bins), 1)
    left, right, base, plot = 44, 12, 232, 190
    slot = (WIDTH - left - right) / BINS
    body = [f'<line class="axis" x1="{left}" y1="{base}" x2="{WIDTH - right}" y2="{base}"/>']
    for tick in sorted({0, top // 2, top}):
        y = base - plot * tick / top
        body += [f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{WIDTH - right}" '
                 f'y2="{y:.1f}"/>', _text(left - 6, y + 4, str(tick), "end", "muted")]
    for index, count in enumerate(bins):
        x, height = left + index * slot, plot * count / top
        body.append(f'<rect class="bar" x="{x + 4:.1f}" y="{base - height:.1f}" '
                    f'width="{slot - 8:.1f}" height="{height:.1f}"/>')
        body.append(_text(x + slot / 2, base - height - 5, str(count), "middle"))
        body.append(_text(x + slot / 2, base + 18, _bin_label(index), "middle", "muted"))
    body.append(_text(left + (WIDTH - left - right) / 2, base + 40,
                      "share of the maximum score", "middle", "muted"))
    counted = sum(bins)
    desc = (f"{counted} students by total score in tenths of the maximum: " + ", ".join(
        f"{_bin_label(i)}: {c}" for i, c in enumerate(bins)) + ".")
    return _svg("scores", base + 50, "Score distribution", desc, body)


def _horizontal(name: str, title: str, desc: str, rows: list[tuple[str, float, str]],
                cls: str, label_above: bool, ticks: tuple[tuple[float, str], ...] = ()) -> str:
    """Bars of length ``share`` (0 to 1) with a label and a value text per row, and grid
    lines labelled below the bars at each tick's share."""
    left = 12 if label_above else 268
    value_room = 72
    span = WIDTH - left - value_room
    step = 44 if label_above else 26
    bottom = 10 + len(rows) * step
    body: list[str] = []
    for share, text in ticks:
        x = left + span * share
        body += [f'<line class="grid" x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{bottom}"/>',
                 _text(x, bottom + 16, text, "middle", "muted")]
    for index, (label, share, value) in enumerate(rows):
        y = 10 + index * step
        if label_above:
            body.append(_text(left + 4, y + 12, label))
            y += 18
        else:
            body.append(_text(left - 8, y + 14, label, "end"))
        width = max(span * min(max(share, 0.0), 1.0), 0.0)
        body.append(f'<rect class="{cls}" x="{left}" y="{y:.1f}" width="{width:.1f}" '
                    f'height="18"/>')
        body.append(_text(left + width + 6, y + 14, value))
    body.append(f'<line class="axis" x1="{left}" y1="4" x2="{left}" y2="{bottom}"/>')
    return _svg(name, bottom + (26 if ticks else 6), title, desc, body)


def difficulty(report: ClassReport) -> str:
    """Each exercise's share of the class that answered it correctly."""
    rows = [(_short(f"{e.exercise_id} {e.title}", LABEL_CHARS), e.share_correct,
             _percent(e.share_correct)) for e in report.exercises]
    desc = "Share of the class correct per exercise: " + ", ".join(
        f"{e.exercise_id}: {_percent(e.share_correct)}" for e in report.exercises) + "."
    return _horizontal("difficulty", "Per-exercise difficulty: share correct", desc, rows,
                       "bar", label_above=False,
                       ticks=((0.0, "0 %"), (0.5, "50 %"), (1.0, "100 %")))


def mistakes_made(report: ClassReport) -> list[tuple[ExerciseStats, str, int]]:
    """Every known mistake someone made: (exercise, label, students), the largest share of
    its exercise's students first."""
    made = [(e, label, count) for e in report.exercises
            for label, count in e.misconceptions if count]
    return sorted(made, key=lambda item: (-item[2] / max(item[0].students, 1), -item[2]))


def misconception_bars(report: ClassReport) -> str:
    """The known mistakes made by the largest shares of the class; the longest bar is the
    largest share, and each says how many students of how many made it."""
    made = mistakes_made(report)[:MOST_MISTAKES]
    shares = [count / max(e.students, 1) for e, _, count in made]
    most = max(shares, default=1.0) or 1.0
    rows = [(_short(f"{e.exercise_id} · {label}", MISTAKE_CHARS), share / most,
             f"{count} of {e.students}") for (e, label, count), share in zip(
                 made, shares, strict=True)]
    desc = "Known mistakes by the number of students who made them: " + "; ".join(
        f"{e.exercise_id} {label}: {count} of {e.students}" for e, label, count in made) + "."
    return _horizontal("mistakes", "Known mistakes made", desc, rows, "mistake",
                       label_above=True)


# --- the tables -----------------------------------------------------------------------------

def _table(caption: str, head: list[tuple[str, bool]], rows: list[list[str]]) -> str:
    """A table; ``head`` gives each column's name and whether it holds numbers. The cells
    are escaped here."""
    kinds = [' class="n"' if n else "" for _, n in head]
    cols = "".join(f'<th scope="col"{kind}>{escape(name)}</th>'
                   for (name, _), kind in zip(head, kinds, strict=True))
    body = "".join(
        "<tr>" + "".join(f"<td{kind}>{escape(cell)}</td>"
                         for cell, kind in zip(row, kinds, strict=True)) + "</tr>"
        for row in rows)
    return (f"<table><caption>{escape(caption)}</caption><thead><tr>{cols}</tr></thead>"
            f"<tbody>{body}</tbody></table>")


def _exercise_table(report: ClassReport) -> str:
    head = [("Exercise", False), ("Students", True), ("Attempted", True), ("Correct", True),
            ("Wrong", True), ("Median", True), ("Mean", True), ("Share correct", True)]
    rows = [[f"{e.exercise_id} {e.title} ({e.category}, {e.max_points} "
             f"point{'s' if e.max_points != 1 else ''})", str(e.students), str(e.attempted),
             str(e.correct), str(e.wrong), str(number(e.median_points)),
             str(number(e.mean_points)), _percent(e.share_correct)]
            for e in report.exercises]
    return _table("Each exercise across the class", head, rows)


def _mistake_table(report: ClassReport) -> str:
    rows = [[f"{e.exercise_id} {e.title}", label, f"{count} of {e.students}"]
            for e, label, count in mistakes_made(report)]
    rows += [[f"{e.exercise_id} {e.title}", "wrong, and no known mistake explains it",
              f"{e.unexplained} of {e.students}"] for e in report.exercises if e.unexplained]
    return _table("Known mistakes and unexplained wrong answers",
                  [("Exercise", False), ("Mistake", False), ("Students", True)], rows)


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def render(report: ClassReport) -> str:
    """The whole page."""
    shares = [t.share for t in report.totals if t.share is not None]
    mean = _percent(sum(shares) / len(shares)) if shares else "–"
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>Class report</title><style>{_STYLE}</style></head><body><main>",
        "<h1>Class report</h1>",
        f"<p>{report.students} students, {len(report.exercises)} exercises; mean score "
        f"{escape(mean)} of the maximum. A student who handed in nothing counts as not "
        "attempted, with 0 points.</p>",
    ]
    if report.unlisted:
        parts.append(f'<p class="note">In the hand-in but not on the roster, so not counted: '
                     f'{escape(", ".join(report.unlisted))}.</p>')
    parts += ["<h2>Score distribution</h2>",
              _figure(histogram(report), "Students by total score, in tenths of the maximum."),
              _table("Students per score range", [("Score", False), ("Students", True)],
                     [[_bin_label(i), str(c)] for i, c in enumerate(report.score_bins())]),
              "<h2>Per-exercise difficulty</h2>"]
    if report.exercises:
        parts.append(_figure(difficulty(report), "Share of the class that answered each "
                             "exercise correctly; a short bar is a hard exercise."))
    parts.append(_exercise_table(report))
    parts.append("<h2>Known mistakes</h2>")
    if mistakes_made(report):
        parts.append(_figure(misconception_bars(report), "The known mistakes made by the "
                             f"largest shares of the class (at most {MOST_MISTAKES}), as "
                             "students out of those the exercise counts."))
    else:
        parts.append("<p>No wrong answer matched a known mistake of its exercise.</p>")
    parts += [_mistake_table(report), "</main></body></html>\n"]
    return "\n".join(parts)


def write_html(report: ClassReport, path: Path) -> None:
    write_private(path, render(report))


def write_class_report(report: ClassReport, out: Path) -> tuple[Path, Path]:
    """``class_report.csv`` and ``class_report.html`` in the gradebook folder ``out``."""
    csv_path, html_path = out / CSV_NAME, out / HTML_NAME
    write_csv(report, csv_path)
    write_html(report, html_path)
    return csv_path, html_path
