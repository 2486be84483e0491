"""The term's policy file: what it says, and every mistake named by file, line and what was
expected. Lateness is worked out by hand from the clock times in each test."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from workbook.instructor.policies import (
    Lateness,
    LatePolicy,
    PolicyError,
    parse_policies,
    read_policies,
)

ROSTER = ("s1234", "s1235", "s1236")
FULL = """\
# the term's rules for chapter 0
[late]
deadline = 2026-03-01T18:00+01:00   # an hour ahead of UTC
grace = 15 min
penalty_per_day = 10 %
penalty_cap = 30%
cutoff = 2026-03-08T18:00+01:00

[grading]
partial_credit = yes

[extensions]
; student, new deadline, reason
s1236, 2026-03-04T18:00+01:00, medical note, signed

[overrides]
s1234, 0.4, 1, regraded by hand: the unit was written out, in words
s1235, 0.5, excused, joined after the chapter was due
s1236, 0.1, 0.5, "half: right method, arithmetic slip"
"""


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(timezone.utc)


def test_the_whole_file_reads_as_written() -> None:
    policies = parse_policies(FULL, "policies.ini", students=ROSTER)
    late = policies.late
    assert late is not None
    assert late.deadline == datetime(2026, 3, 1, 17, 0, tzinfo=timezone.utc)
    assert late.grace == timedelta(minutes=15)
    assert (late.penalty_per_day, late.penalty_cap) == (10.0, 30.0)
    assert late.cutoff == datetime(2026, 3, 8, 17, 0, tzinfo=timezone.utc)
    assert policies.partial_credit is True
    assert policies.extension("s1236") == datetime(2026, 3, 4, 17, 0, tzinfo=timezone.utc)
    assert policies.extensions["s1236"].reason == "medical note, signed"
    assert policies.extension("s1234") is None
    first = policies.override("s1234", "0.4")
    assert first is not None and first.points == 1.0 and first.line == 17
    assert first.reason == "regraded by hand: the unit was written out, in words"
    excused = policies.override("s1235", "0.5")
    assert excused is not None and excused.excused and excused.points is None
    quoted = policies.override("s1236", "0.1")
    assert quoted is not None and quoted.points == 0.5
    assert quoted.reason == "half: right method, arithmetic slip"
    assert policies.source == "policies.ini"

    assert policies.describe() == (
        "due 2026-03-01T17:00+00:00 (+15 min grace), -10 % per day late (at most 30 %), "
        "nothing after 2026-03-08T17:00+00:00; partial credit on; 1 extension; 3 overrides")


def test_an_empty_file_changes_nothing_and_partial_credit_is_off_by_default() -> None:
    policies = parse_policies("# nothing yet\n\n")
    assert policies.late is None and not policies.partial_credit
    assert not policies.overrides and not policies.extensions
    assert parse_policies("[grading]\npartial_credit = no\n").partial_credit is False
    assert policies.describe() == "partial credit off"


def test_lines_are_numbered_as_an_editor_numbers_them() -> None:
    # Windows line ends, and a form feed (a line break to str.splitlines, not to an editor)
    text = "[overrides]\r\ns1234, 0.4, 1, page\x0cbreak\r\n\r\ns1234, 0.4, 0, again\r\n"
    with pytest.raises(PolicyError, match=r"^p, line 4: .* already overridden on line 2"):
        parse_policies(text, "p")


def test_without_a_roster_any_student_id_is_taken() -> None:
    policies = parse_policies("[overrides]\nanyone, 0.4, 0, copied\n")
    assert policies.override("anyone", "0.4") is not None


@pytest.mark.parametrize(("text", "line", "said"), [
    ("[overrides]\ns1243, 0.4, 1, x\n", 2, "no student 's1243' on the roster (did you mean"),
    ("[overrides]\ns1234, 0.99, 1, x\n", 2, "no exercise '0.99'"),
    ("[overrides]\ns1234, 0.4, 2, x\n", 2, "expected the points (0 to 1"),
    ("[overrides]\ns1234, 0.4, 0.333, x\n", 2, "at most two decimals"),
    ("[overrides]\ns1234, 0.4, -1, x\n", 2, "expected the points"),
    ("[overrides]\ns1234, 0.4, full, x\n", 2, "or 'excused'"),
    ("[overrides]\ns1234, 0.4, 1\n", 2, "expected student, exercise, points or excused, reason"),
    ("[overrides]\ns1234, 0.4, 1, a\n\ns1234, 0.4, 0, b\n", 4, "already overridden on line 2"),
    ("[extensions]\ns1234\n", 2, "expected student, new deadline"),
    ("[late]\ndeadline = 2026-03-01T18:00\n[extensions]\ns1234, 2026-03-02, a\n"
     "s1234, 2026-03-03, b\n", 5, "s1234 already has an extension on line 4"),
    ("[late]\ndeadline = 2026-03-01T18:00\n[extensions]\ns1234, 2026-02-28T18:00\n", 4,
     "new deadline is not after the deadline"),
    ("[extensions]\ns1234, 2026-03-04T18:00\n", 2, "needs a [late] section"),
    ("[extensions]\ns1234, next friday\n", 2, "expected the new deadline as a date"),
    ("[late]\ngrace = 5 min\n", 1, "[late] needs a deadline"),
    ("[late]\ndeadline = friday\n", 2, "expected the deadline as a date and time"),
    ("[late]\ndeadline = 2026-03-01T18:00\ngrace = a bit\n", 3, "expected grace as a duration"),
    ("[late]\ndeadline = 2026-03-01T18:00\npenalty_per_day = 150 %\n", 3,
     "percentage from 0 to 100"),
    ("[late]\ndeadline = 2026-03-01T18:00\ncutoff = 2026-03-01T18:10\ngrace = 15 min\n", 3,
     "the cut-off must come after the deadline and its grace"),
    ("[late]\ndeadline = 2026-03-01T18:00\ndeadline = 2026-03-02T18:00\n", 3,
     "deadline is already set on line 2"),
    ("[late]\ndue = 2026-03-01T18:00\n", 2, "with a name of [late] (deadline, grace"),
    ("[late]\ndeadline 2026-03-01T18:00\n", 2, "expected 'name = value'"),
    ("[grading]\npartial_credit = sometimes\n", 2, "expected partial_credit = yes or no"),
    ("[grading]\n[grading]\n", 2, "[grading] is already on line 1"),
    ("[penalties]\n", 1, "expected a section heading, one of [late]"),
    ("[late\n", 1, "expected a section heading"),
    ("deadline = 2026-03-01T18:00\n", 1, "expected a section heading first"),
])
def test_every_mistake_names_the_file_the_line_and_what_was_expected(
        text: str, line: int, said: str) -> None:
    with pytest.raises(PolicyError) as raised:
        parse_policies(text, "term/policies.ini", students=ROSTER)
    message = str(raised.value)
    assert message.startswith(f"term/policies.ini, line {line}: "), message
    assert said in message, message


def test_a_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=re.escape(str(tmp_path / "none.ini"))):
        read_policies(tmp_path / "none.ini")
    latin = tmp_path / "latin.ini"
    latin.write_bytes("[overrides]\ns1234, 0.4, 1, r\xe9vis\xe9\n".encode("latin-1"))
    with pytest.raises(PolicyError, match="not UTF-8"):
        read_policies(latin)
    good = tmp_path / "policies.ini"
    good.write_text("\ufeff" + FULL, encoding="utf-8")  # a BOM, as some editors write
    assert read_policies(good, ROSTER).source == str(good)
    with pytest.raises(PolicyError, match=r"policies.ini, line 17: no student 's1234'"):
        read_policies(good, ("s1235", "s1236"))


# --- lateness, by hand ------------------------------------------------------------------

POLICY = LatePolicy(deadline=utc("2026-03-01T18:00+00:00"), grace=timedelta(minutes=15),
                    penalty_per_day=10.0, penalty_cap=30.0,
                    cutoff=utc("2026-03-08T18:00+00:00"))


@pytest.mark.parametrize(("handed", "days", "percent"), [
    ("2026-03-01T17:59+00:00", 0, 0.0),      # before the deadline
    ("2026-03-01T18:15+00:00", 0, 0.0),      # at the end of the grace period
    ("2026-03-01T18:16+00:00", 1, 10.0),     # a minute past grace: one day started
    ("2026-03-02T18:14+00:00", 1, 10.0),     # 23 h 59 min past grace
    ("2026-03-02T18:16+00:00", 2, 20.0),     # 24 h 1 min past grace: a second day
    ("2026-03-02T19:16+01:00", 2, 20.0),     # the same moment, written an hour ahead
    ("2026-03-04T18:16+00:00", 4, 30.0),     # 4 days would be 40 %: the cap is 30 %
    ("2026-03-08T18:00+00:00", 7, 30.0),     # at the cut-off itself: still counted
])
def test_each_started_day_past_deadline_and_grace_costs_the_penalty_up_to_the_cap(
        handed: str, days: int, percent: float) -> None:
    assert POLICY.assess(utc(handed)) == Lateness(POLICY.deadline, days, percent)


def test_after_the_cutoff_a_hand_in_scores_nothing() -> None:
    late = POLICY.assess(utc("2026-03-08T18:01+00:00"))
    # 7 days less 14 minutes past deadline and grace: the seventh day started
    assert late.after_cutoff and late.percent == 100.0 and late.days == 7


def test_an_extension_moves_the_deadline_and_the_cutoff_with_it() -> None:
    extended = utc("2026-03-04T18:00+00:00")  # three days later
    assert POLICY.assess(utc("2026-03-04T18:10+00:00"), extended) == Lateness(extended)
    assert POLICY.assess(utc("2026-03-04T18:20+00:00"), extended) == Lateness(
        extended, 1, 10.0)
    # the cut-off moved from 8 to 11 March: 9 March is late (5 days, capped), not cut off
    on_ninth = POLICY.assess(utc("2026-03-09T12:00+00:00"), extended)
    assert (on_ninth.days, on_ninth.percent, on_ninth.after_cutoff) == (5, 30.0, False)
    assert POLICY.assess(utc("2026-03-11T18:01+00:00"), extended).after_cutoff


def test_the_guides_example_file_reads(tmp_path: Path) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "instructors.md").read_text()
    blocks = re.findall(r"```ini\n(.*?)```", guide, re.DOTALL)
    assert blocks, "the guide shows a policy file in an ```ini block"
    for block in blocks:
        policies = parse_policies(block, "guide")
        assert policies.late is not None and policies.overrides
