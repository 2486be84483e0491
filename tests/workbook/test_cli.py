"""The command line: exit codes and output a person (or a script) can rely on."""

from __future__ import annotations

import json
import re
from pathlib import Path

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
    assert code.startswith("DTW2:")
    assert main(["import-progress", code]) == 0
    assert "0 new" in capsys.readouterr().out
    assert main(["import-progress", "DTW2:garbage:00000000:" + "0" * 32]) == 1


RING_RS_ONLY = '''
import numpy as np

def ring_allreduce(rank):
    n, me = rank.size, rank.id
    x = np.array(rank.data, copy=True)
    parts = np.array_split(np.arange(len(x)), n)
    for s in range(n - 1):
        rank.send((me + 1) % n, x[parts[(me - s) % n]])
        yield
        x[parts[(me - s - 1) % n]] += rank.recv((me - 1) % n)
    STEPS
    return x
'''
ALL_GATHER = '''for s in range(n - 1):
        rank.send((me + 1) % n, x[parts[(me + 1 - s) % n]])
        yield
        x[parts[(me - s) % n]] = rank.recv((me - 1) % n)'''


def test_a_lab_is_checked_from_a_python_file(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong, right, broken = (tmp_path / f"{n}.py" for n in ("wrong", "right", "broken"))
    wrong.write_text(RING_RS_ONLY.replace("STEPS", "pass"))
    right.write_text(RING_RS_ONLY.replace("STEPS", ALL_GATHER))
    broken.write_text("def ring_allreduce(rank):\n    return 1 +\n")
    assert main(["check", "0.7", str(wrong)]) == 1
    out = capsys.readouterr().out
    # cases are drawn afresh for every check: the trace names whichever case failed
    assert "Not yet" in out and re.search(r"Your trace, case N=\d+, M=\d+, \w+:", out), out
    assert main(["check", "0.7", str(right)]) == 0
    assert "passes all 6 cases" in capsys.readouterr().out
    assert main(["check", "0.7", str(broken)]) == 2
    assert "did not define the answer: SyntaxError" in capsys.readouterr().err


def test_a_build_exercise_is_checked_from_a_python_file(tmp_path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    # 0.5: T = 2(N-1)(S/(N B) + alpha), in ms; ValueError on impossible inputs
    answer = tmp_path / "time.py"
    answer.write_text('''
def ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us):
    ok = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v == v \\
        and abs(v) != float("inf")
    if not all(ok(v) for v in (message_gb, n_gpus, link_gb_per_s, latency_us)):
        raise ValueError("numbers only")
    if message_gb < 0 or link_gb_per_s <= 0 or latency_us < 0 or n_gpus < 1 \\
            or int(n_gpus) != n_gpus:
        raise ValueError("impossible input")
    n = int(n_gpus)
    return 2 * (n - 1) * (1000.0 * message_gb / n / link_gb_per_s + latency_us / 1000.0)
''')
    assert main(["check", "0.5", str(answer)]) == 0, capsys.readouterr().out


def test_list_names_the_labs_beyond_the_58(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[0] == "0.7" and line.endswith("(beyond the 58)") for line in lines)


def test_a_missing_answer_file_is_a_usage_error(tmp_path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "0.7", str(tmp_path / "nowhere.py")]) == 2
    assert "no file" in capsys.readouterr().err


def test_output_into_a_closed_pipe_ends_quietly(tmp_path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "WORKBOOK_HOME": str(tmp_path)}
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone, as `| head` leaves it after its lines
    done = subprocess.run([sys.executable, "-m", "workbook.cli", "list"], stdout=write_end,
                          stderr=subprocess.PIPE, env=env, text=True, timeout=60)
    os.close(write_end)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_progress_moves_between_machines_with_the_progress_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A code from one machine imports on another only once that machine uses the first
    one's key (`workbook progress-key`, then `workbook progress-key KEY`)."""
    from workbook.learner import progress_log

    monkeypatch.setenv("WORKBOOK_HOME", str(tmp_path / "laptop"))
    progress_log.reopen()
    main(["check", "0.1", "1 GB"])
    assert main(["progress-key"]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    main(["export-progress"])
    code = capsys.readouterr().out.strip()
    monkeypatch.setenv("WORKBOOK_HOME", str(tmp_path / "desktop"))
    progress_log.reopen()
    assert main(["import-progress", code]) == 1            # another machine's key
    assert main(["progress-key", "DTWK-nonsense"]) == 2
    assert main(["progress-key", key]) == 0
    assert main(["import-progress", code]) == 0
    assert "Imported 1 new event(s)." in capsys.readouterr().out
