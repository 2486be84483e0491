"""The command line: exit codes and output a person (or a script) can rely on."""

from __future__ import annotations

import json

import pytest

from workbook.cli import main


def test_check_right_and_wrong(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "0.1", "1.75 GB"]) == 0
    assert "Correct" in capsys.readouterr().out
    assert main(["check", "0.1", "2 GB"]) == 1
    assert "Not yet" in capsys.readouterr().out


def test_structured_answers_are_read_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "9.8", '["TP", "CP", "PP", "DP"]']) == 0


def test_unknown_exercise_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "42.1", "3"]) == 2
    assert "valid ids" in capsys.readouterr().err


def test_bad_arguments_exit_2() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "0.1"])
    assert exit_info.value.code == 2


def test_show_hint_solution_and_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "5.1"]) == 0
    assert "Exercise 5.1" in capsys.readouterr().out
    assert main(["hint", "5.1"]) == 0
    assert "Hint 1 of" in capsys.readouterr().out
    assert main(["solution", "5.1"]) == 0
    assert main(["list"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) >= 58


def test_progress_json_and_transfer(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "0.1", "1.75"])
    capsys.readouterr()
    assert main(["progress", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == 58 and data["streak_days"] == 1
    assert main(["export-progress"]) == 0
    code = capsys.readouterr().out.strip()
    assert code.startswith("DTW1:")
    assert main(["import-progress", code]) == 0
    assert "0 new" in capsys.readouterr().out
    assert main(["import-progress", "DTW1:garbage:00000000"]) == 1
