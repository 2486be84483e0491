"""The progress dashboard: overall and per-chapter mastery, and the day streak.

:func:`summarize` turns the log into a :class:`ProgressSummary`, which shows itself as
a small HTML dashboard in a notebook (``_repr_html_``), as a plain-text table in a
terminal (``str``) and as a dict for ``--json`` output (``to_dict``).

Counts are cumulative: ``proficient`` counts exercises at "proficient" *or above*, and
``attempted`` every exercise checked at least once, so mastered <= proficient <=
attempted <= total. The dashboard never relies on colour alone: every bar is drawn in
characters and comes with the same figures in words.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from autograder.progress.events import Event
from autograder.progress.mastery import LEVELS, Level, count_at_least, levels
from autograder.progress.streaks import best_streak, current_streak

#: (chapter number, chapter title, exercise ids in the chapter)
ChapterSpec = tuple[int, str, Sequence[str]]
#: (exercise id, title) of a record kept outside the counted exercises (a lab)
ExtraSpec = tuple[str, str]

BAR_WIDTH = 20


@dataclass(frozen=True)
class ChapterProgress:
    """How many of one chapter's exercises reach each level (cumulative counts)."""

    chapter: int
    title: str
    mastered: int
    proficient: int
    attempted: int
    total: int


@dataclass(frozen=True)
class ProgressSummary:
    """Overall and per-chapter mastery, the current and best day streak, every level."""

    mastered: int
    proficient: int
    attempted: int
    total: int
    streak_days: int
    best_streak: int
    chapters: tuple[ChapterProgress, ...]
    levels: dict[str, Level] = field(default_factory=dict, repr=False)
    # Records beyond the counted exercises (challenges and labs), shown on their own:
    # (id, title, level).
    beyond: tuple[tuple[str, str, Level], ...] = ()
    warnings: tuple[str, ...] = ()  # why the figures may be incomplete (unreadable log rows)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output; ``counts`` gives the number at each exact level."""
        counts = {level: 0 for level in LEVELS}
        for level in self.levels.values():
            counts[level] += 1
        return {
            "mastered": self.mastered, "proficient": self.proficient,
            "attempted": self.attempted, "total": self.total,
            "streak_days": self.streak_days, "best_streak": self.best_streak,
            "counts": counts,
            "chapters": [asdict(chapter) for chapter in self.chapters],
            "levels": dict(self.levels),
            "beyond": [{"id": i, "title": t, "level": lv} for i, t, lv in self.beyond],
            "warnings": list(self.warnings),
        }

    def __str__(self) -> str:
        lines = [
            f"Mastered {self.mastered} / {self.total}  [{text_bar(self.mastered, self.total)}]"
            f"  {percent(self.mastered, self.total)}%",
            f"Proficient or better {self.proficient} / {self.total}, "
            f"attempted {self.attempted} / {self.total}",
            f"Streak: {streak_words(self.streak_days, self.best_streak)}",
            "",
            _text_row("Ch", "Title", "Mastered", "Proficient", "Attempted"),
        ]
        for ch in self.chapters:
            lines.append(_text_row(
                str(ch.chapter), ch.title, f"{ch.mastered} / {ch.total}",
                f"{ch.proficient} / {ch.total}", f"{ch.attempted} / {ch.total}"))
        if self.beyond:
            lines += ["", f"Beyond the {self.total} (challenges and labs, not counted):"]
            lines += [f"  {i:>5}  {t}: {lv}" for i, t, lv in self.beyond]
        lines += [f"Warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        overall = (
            f"<p><strong>Mastered {self.mastered} / {self.total}</strong> "
            f"{_html_bar(self.mastered, self.total)} "
            f"({percent(self.mastered, self.total)}%)</p>"
            f"<p>Proficient or better: {self.proficient} / {self.total}. "
            f"Attempted: {self.attempted} / {self.total}.</p>"
            f'<p><span aria-hidden="true">&#x1F525;</span> Day streak: '
            f"{html.escape(streak_words(self.streak_days, self.best_streak))}</p>"
        )
        warned = "".join(f'<p role="alert"><strong>Warning:</strong> {html.escape(w)}</p>'
                         for w in self.warnings)
        return (
            '<section class="dtw-progress" aria-label="Workbook progress" '
            'style="font-family: system-ui, sans-serif; line-height: 1.4">'
            f"{warned}{overall}{self._html_table()}{self._html_beyond()}</section>"
        )

    def _html_beyond(self) -> str:
        if not self.beyond:
            return ""
        items = "".join(f"<li>{html.escape(i)} {html.escape(t)}: {html.escape(lv)}</li>"
                        for i, t, lv in self.beyond)
        return (f"<p>Beyond the {self.total}: challenges and labs (not counted):</p>"
                f"<ul>{items}</ul>")

    def _html_table(self) -> str:
        head = "".join(f'<th scope="col" style="text-align:{align}; padding:2px 4px">{name}</th>'
                       for name, align in (("Chapter", "left"), ("Mastered", "left"),
                                           ("Proficient or better", "right"),
                                           ("Attempted", "right")))
        rows = "".join(_html_row(ch) for ch in self.chapters)
        # max-width and a bar under each count: the table fits a narrow notebook (800 px
        # with the file browser open) instead of running off its right edge
        return ('<table style="border-collapse: collapse; max-width: 100%">'
                "<caption style=\"text-align:left\">Progress by chapter</caption>"
                f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")


def summarize(events: Iterable[Event], chapters: Sequence[ChapterSpec],
              today: date, beyond: Sequence[ExtraSpec] = (),
              warnings: Sequence[str] = ()) -> ProgressSummary:
    """The dashboard for ``chapters`` (number, title, exercise ids) as of ``today``.

    ``today`` is the learner's local date. Events for ids not listed in ``chapters``
    (predictions, design choices, retired exercises) do not count towards mastery;
    ``beyond`` (id, title): challenges and labs, with levels of their own, listed apart
    from the counts.
    """
    log = list(events)
    all_ids = list(dict.fromkeys(eid for _, _, ids in chapters for eid in ids))
    level_of = levels(log, all_ids)
    beyond_levels = levels(log, [eid for eid, _ in beyond])
    return ProgressSummary(
        mastered=count_at_least(level_of, "mastered"),
        proficient=count_at_least(level_of, "proficient"),
        attempted=count_at_least(level_of, "attempted"),
        total=len(level_of),
        streak_days=current_streak(log, today),
        best_streak=best_streak(log),
        chapters=tuple(_chapter(number, title, ids, level_of)
                       for number, title, ids in chapters),
        levels=level_of,
        beyond=tuple((eid, title, beyond_levels[eid]) for eid, title in beyond),
        warnings=tuple(warnings),
    )


def _chapter(number: int, title: str, ids: Sequence[str],
             level_of: dict[str, Level]) -> ChapterProgress:
    mine = {eid: level_of[eid] for eid in ids}
    return ChapterProgress(
        chapter=number, title=title,
        mastered=count_at_least(mine, "mastered"),
        proficient=count_at_least(mine, "proficient"),
        attempted=count_at_least(mine, "attempted"),
        total=len(mine),
    )


def percent(done: int, total: int) -> int:
    """Whole percent, rounded down so that nothing shows 100% until it is complete."""
    return 0 if total <= 0 else (100 * done) // total


def text_bar(done: int, total: int, width: int = BAR_WIDTH, fill: str = "#",
             empty: str = ".") -> str:
    """A bar of ``width`` characters, filled in proportion (rounded down)."""
    filled = 0 if total <= 0 else min(width, (width * done) // total)
    return fill * filled + empty * (width - filled)


def streak_words(days: int, best: int) -> str:
    """The streak in words: "4 days (best 9 days)"."""
    best_text = f"best {_days(best)}"
    if days == 0:
        return f"none running; get a check right today to start one ({best_text})"
    return f"{_days(days)} ({best_text})"


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def _text_row(ch: str, title: str, mastered: str, proficient: str, attempted: str) -> str:
    short = title if len(title) <= 32 else title[:31] + "…"
    return f"{ch:>3}  {short:<32}  {mastered:>9}  {proficient:>10}  {attempted:>9}"


def _html_bar(done: int, total: int, size: str = "1em") -> str:
    # The bar is decoration for sighted readers; the numbers beside it carry the meaning.
    bar = text_bar(done, total, fill="\u2588", empty="\u2591")
    return (f'<span aria-hidden="true" style="font-family: monospace; font-size: {size}; '
            f'white-space: nowrap">{bar}</span>')


def _html_row(ch: ChapterProgress) -> str:
    cell = 'style="padding:2px 4px; text-align:{}"'
    return (
        f"<tr><td {cell.format('left')}>{ch.chapter}. {html.escape(ch.title)}</td>"
        f"<td {cell.format('left')}>{ch.mastered} / {ch.total}<br>"
        f"{_html_bar(ch.mastered, ch.total, size='0.5em')}</td>"
        f"<td {cell.format('right')}>{ch.proficient} / {ch.total}</td>"
        f"<td {cell.format('right')}>{ch.attempted} / {ch.total}</td></tr>"
    )
