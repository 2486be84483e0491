"""The whole pipeline on the toy chapter: every file ends as rows, whatever goes wrong."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from autograder.grading import GradingSettings, grade_folder, pipeline

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")


def test_a_bug_on_one_file_is_an_error_row_and_the_batch_goes_on(
        release, toy_notebook, write_notebook, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    write_notebook("in/ann/toy.ipynb", toy_notebook({"1.1": "answer_1_1 = 2"}))
    write_notebook("in/bob/toy.ipynb", toy_notebook({"1.1": "answer_1_1 = 'boom'"}))
    write_notebook("in/cy/toy.ipynb", "not json")
    real = pipeline.grade_task

    def fragile(ctx, task):
        if ctx.plan.job.job_id == "1" and task.record.id == "1.1":  # bob's first answer
            raise RuntimeError("simulated grader bug")
        return real(ctx, task)

    monkeypatch.setattr(pipeline, "grade_task", fragile)
    batch = grade_folder(tmp_path / "in", {1: release}, GradingSettings(workers=2, timeout_s=1))
    by_student = {nb.student: nb for nb in batch.notebooks}
    assert [e.status for e in by_student["ann"].exercises] == ["correct", "unanswered"]
    # the bug costs only the row it happened on: bob's other exercise is still graded
    assert [e.status for e in by_student["bob"].exercises] == ["error", "unanswered"]
    assert by_student["bob"].exercises[0].message == (
        "the grader failed on this file (RuntimeError: simulated grader bug); this is a bug "
        "in the grader, please report it with the file")
    assert by_student["cy"].problem.startswith("cy/toy.ipynb: not valid JSON")
    assert not batch.all_graded


def test_limits_follow_the_timeout_and_the_work_in_a_job() -> None:
    limits = GradingSettings(timeout_s=2).limits(cost=5)
    assert (limits.cell_timeout_s, limits.call_timeout_s) == (2, 2)
    assert limits.wall_s == limits.cpu_s == 2 * 5 + 2
    assert GradingSettings(timeout_s=1).limits(cost=1000).wall_s == 1 * 40 + 2  # capped
