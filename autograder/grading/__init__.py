"""The batch grader: grade a class's submitted notebooks, safely and fast.

    from autograder.grading import GradingSettings, grade_folder, write_outputs
    batch = grade_folder(Path("submitted"), releases, GradingSettings(workers=4, timeout_s=10))
    write_outputs(batch, Path("grades"))      # grades.csv, grades.json, feedback/

The engine knows no particular exercise: the content package describes each chapter's
release (:class:`Release`: its cells and a :class:`Task` per exercise) and passes it in.
The steps, one module each, in the order a file meets them:

* :mod:`.discover`   find notebooks (flat and nbgrader layouts) and empty student folders;
* :mod:`.read`       parse the JSON, refuse what is not an nbformat 4 notebook;
* :mod:`.identify`   which chapter, from metadata (cells' ids as a fallback);
* :mod:`.match`      pair submitted cells with release cells; find the learner's own;
* :mod:`.integrity`  edited check/locked cells, reference imports, tricks, blocked access;
* :mod:`.jobs`       one sandbox job per file (:mod:`.guard` adds the grader's cells);
* :mod:`.compare`    plain results -> one row per exercise via ``record.grade``
  (:mod:`.replay` stands in for a learner's function);
* :mod:`.report`, :mod:`.feedback`  grades.csv, grades.json, per-student HTML pages;
* :mod:`.fill`      write answers into a release notebook (dry runs, benchmarks, tests);
* :mod:`.pipeline`   the steps in order, the worker pool, the batch.
"""

from autograder.grading.model import (
    STATUSES,
    Batch,
    ExerciseResult,
    Finding,
    NotebookResult,
    Release,
    ReleaseCell,
    Task,
)
from autograder.grading.pipeline import (
    GradingSettings,
    grade_folder,
    protected_folders,
    write_outputs,
)
from autograder.grading.status_bar import StatusBar

__all__ = [
    "STATUSES", "Batch", "ExerciseResult", "Finding", "NotebookResult", "StatusBar", "Release",
    "ReleaseCell", "GradingSettings", "Task", "grade_folder", "protected_folders", "write_outputs",
]
