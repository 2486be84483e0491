"""The learner API: check, hint, solution, practice and their traces in the progress log."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbook as wb
from autograder.template import fill
from workbook.learner import progress_log


def checks() -> list:
    return [e for e in progress_log.events() if e.action == "check"]


def test_right_answer_passes_and_is_logged() -> None:
    result = wb.check("0.1", "1.75 GB")  # 2 x 1 GB x 7/8 = 1.75 GB
    assert result.passed
    assert "Correct" in result._repr_html_()
    [event] = checks()
    assert (event.exercise_id, event.status, event.variant) == ("0.1", "correct", None)


def test_units_are_converted() -> None:
    assert wb.check("0.1", "1750 MB").passed
    assert wb.check("0.1", 1.75).passed
    assert wb.check("0.2", "0.07 s").passed  # 3.5 GB / 50 GB/s = 70 ms


def test_misconception_gets_its_feedback_and_does_not_raise() -> None:
    result = wb.check("0.1", "2 GB")  # 2M: the large-N limit, not 2M(N-1)/N
    assert not result.passed
    assert "(N-1)/N" in result.message or "N-1" in result.message
    assert checks()[-1].status == "wrong"


@pytest.mark.parametrize("bad", [None, float("nan"), float("inf"), True, [1.75], "lots", "70 ms"])
def test_unreadable_answers_are_explained_and_not_counted(bad: object) -> None:
    result = wb.check("0.1", bad)
    assert not result.passed and not result.attempt_counted
    assert result.message
    assert checks() == []


def test_grading_mode_raises_on_wrong_and_logs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert wb.check("0.1", 1.75).passed
    with pytest.raises(AssertionError, match="0.1"):
        wb.check("0.1", 2.0)
    with pytest.raises(AssertionError, match="Not answered"):
        wb.check("0.1", None)
    assert progress_log.events() == []


def test_hints_climb_the_ladder_and_are_counted() -> None:
    record = wb.exercise("0.1")
    first, second = wb.hint("0.1"), wb.hint("0.1")
    assert first.body == fill(record.hints[0], record.params)
    assert second.body == fill(record.hints[1], record.params)
    wb.check("0.1", 1.75)
    assert checks()[-1].hints_used == 2


def test_solution_view_is_recorded_on_the_next_check() -> None:
    text = wb.solution("0.1")
    assert "1.75" in str(text)
    wb.check("0.1", 1.75)
    assert checks()[-1].solution_viewed


def test_practice_checks_the_next_answer_against_the_variant() -> None:
    drill = wb.practice("0.1", seed=7)
    record = wb.exercise("0.1")
    expected = record.expected(drill.params)
    assert wb.check("0.1", expected).passed
    assert checks()[-1].variant == drill.params
    assert wb.check("0.1", 1.75).passed  # back to the canonical numbers
    assert checks()[-1].variant is None


def test_progress_counts_a_proficient_answer_and_a_streak() -> None:
    wb.check("0.1", 1.75)
    summary = wb.progress()
    assert summary.total == 58
    assert summary.levels["0.1"] == "proficient"
    assert summary.streak_days == 1 and summary.best_streak == 1


def test_export_and_import_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wb.check("0.1", 1.75)
    wb.hint("0.2")
    code, key = wb.export_progress(), wb.progress_key()
    monkeypatch.setenv("WORKBOOK_HOME", str(tmp_path / "elsewhere"))
    progress_log.reopen()
    with pytest.raises(ValueError, match="not made with your progress key"):
        wb.import_progress(code)  # another machine: its own key, until the learner's is used
    wb.use_progress_key(key)
    assert wb.import_progress(code) == 2
    assert wb.import_progress(code) == 0
    assert wb.progress().levels["0.1"] == "proficient"


def test_a_corrupt_log_is_reported_never_overwritten(fresh_home: Path) -> None:
    fresh_home.mkdir(parents=True, exist_ok=True)
    log = fresh_home / "progress.sqlite3"
    log.write_bytes(b"this is not a database" * 100)
    progress_log.reopen()
    result = wb.check("0.1", 1.75)
    assert result.passed
    assert "Progress not saved" in str(result)
    assert "Progress not saved" in result._repr_html_()
    assert log.read_bytes() == b"this is not a database" * 100


def test_unknown_exercise_names_valid_ids() -> None:
    with pytest.raises(KeyError, match="valid ids"):
        wb.check("12.3", 1)


def test_untouched_function_stub_is_not_an_attempt() -> None:
    namespace: dict = {}
    record = wb.exercise("0.5")
    exec(record.answer_kind.placeholder(record.names), namespace)  # the answer cell as generated
    result = wb.check("0.5", namespace["ring_allreduce_time_ms"])
    assert not result.passed and not result.attempt_counted
    assert str(result).startswith("○ Not answered yet")

    def ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us):
        return 0.0  # a real (wrong) attempt

    assert wb.check("0.5", ring_allreduce_time_ms).attempt_counted
    assert not wb.check("0.6", (None, ring_allreduce_time_ms)).attempt_counted


def test_a_long_answer_is_logged_cut_to_the_event_limit() -> None:
    answer = " " * 2500 + "1.75 GB"
    assert wb.check("0.1", answer).passed
    [event] = checks()
    assert event.answer == repr(answer)[:2000]  # 2,000 characters, as the log promises


def test_every_lazy_name_stays_the_function_after_its_module_loads() -> None:
    # A lazy name equal to a submodule's name would be replaced by that module on import.
    import importlib

    import workbook

    for name, module in workbook._LAZY.items():
        importlib.import_module(module)
        assert callable(getattr(workbook, name)), name
        assert not isinstance(getattr(workbook, name), type(workbook)), name


def test_hint_and_solution_follow_a_waiting_practice_variant() -> None:
    import workbook as wb
    from workbook.records import lookup

    record = lookup("5.6")
    printed = wb.solution("5.6").body
    variant = wb.practice("5.6", seed=1).params
    assert variant != dict(record.params)
    shown = wb.solution("5.6").body
    assert shown == record.render_explanation(variant) and shown != printed
    assert wb.hint("5.6").body.startswith(record.hints[0].split("{")[0])
    wb.check("5.6", 1)  # the check uses the variant up; the printed numbers come back
    assert wb.solution("5.6").body == printed


def test_progress_lists_every_record_beyond_the_58() -> None:
    import workbook as wb
    from workbook.records import all_challenges, all_labs

    wb.check("9.10", {"tp": 8, "pp": 16, "dp": 128})
    summary = wb.progress()
    listed = [row[0] for row in summary.beyond]
    assert sorted(listed) == sorted(r.id for r in (*all_challenges(), *all_labs()))
    assert summary.total == 58
    assert dict((i, lv) for i, _, lv in summary.beyond)["9.10"] != "new"
