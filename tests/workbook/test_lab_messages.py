"""A lab's numpy shape error reads as what it means.

A plausible slip in the tensor-parallel lab (multiplying by the wrong matrix, or by one
not transposed) raises numpy's "mismatch in its core dimension ... gufunc signature"; the
learner reads that it is a shape mismatch and what to print, beside numpy's own words.
Other problems are left as they are.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbook.learner import checking
from workbook.records._labs import SHAPE_ADVICE, explained


def _numpy_error(action: object) -> str:
    with pytest.raises(ValueError) as caught:
        action()  # type: ignore[operator]
    return f"Your program raised an error: rank 0 at step 0: ValueError: {caught.value}"


@pytest.mark.parametrize("action", [
    lambda: np.ones((3, 7)) @ np.ones((5, 4)),          # matmul, inner sizes differ
    lambda: np.ones((3, 7)) + np.ones((4, 7)),           # broadcasting
    lambda: np.dot(np.ones((3, 7)), np.ones((5, 4))),    # dot: "not aligned"
], ids=["matmul", "broadcast", "dot"])
def test_numpy_shape_errors_are_explained(action: object) -> None:
    problem = _numpy_error(action)
    said = explained(problem)
    assert said.startswith(problem.rstrip(".")) and said.endswith(SHAPE_ADVICE)


def test_other_problems_are_left_as_they_are() -> None:
    for problem in ("rank 2 returned None; expected its output", "Your program was stopped"):
        assert explained(problem) == problem


LAB_6_6_SLIP = '''
def tp_mlp_forward(rank):
    import numpy as np
    x, a, b = rank.data["x"], rank.data["a"], rank.data["b"]
    y = np.maximum(x @ a, 0.0) @ b.T
    y = yield from rank.all_reduce(y)
    return y
'''


def test_the_tensor_parallel_lab_explains_a_transposed_matrix(tmp_path: Path) -> None:
    namespace: dict[str, object] = {}
    exec(LAB_6_6_SLIP, namespace)  # noqa: S102 - the learner's function, as a cell defines it
    result = checking.check("6.6", namespace["tp_mlp_forward"])
    text = str(result)
    assert "not yet" in text.lower() and SHAPE_ADVICE in text, text
