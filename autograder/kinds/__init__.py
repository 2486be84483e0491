"""Answer kinds: how each shape of answer is parsed, compared and explained."""

from autograder.kinds.base import AnswerKind, Misconception, Verdict
from autograder.kinds.choice import Choice, Option
from autograder.kinds.constraints import Constraints, Rule
from autograder.kinds.debug import Debug
from autograder.kinds.function import Function
from autograder.kinds.lab import Lab
from autograder.kinds.numeric import Numeric
from autograder.kinds.ordering import Ordering
from autograder.kinds.trace import Trace

__all__ = [
    "AnswerKind", "Choice", "Constraints", "Debug", "Function", "Lab", "Misconception",
    "Numeric", "Option", "Ordering", "Rule", "Trace", "Verdict",
]
