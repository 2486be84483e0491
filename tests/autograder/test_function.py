"""Function answers and the per-call time limit."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

from autograder.kinds import Function
from autograder.kinds.function import same
from autograder.timelimit import call_with_time_limit


def reference(m_gb: float, n: int, bw_gbs: float, latency_us: float) -> float:
    """Ring AllReduce time in ms: 2(N-1) steps of M/N GB, plus a latency per step."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    steps = 2 * (n - 1)
    return steps * (m_gb / n) / bw_gbs * 1000 + steps * latency_us / 1000


def draw(rng: random.Random) -> tuple[Any, ...]:
    return (rng.choice([0.5, 1.0, 2.0, 7.0]), rng.choice([2, 4, 8, 64]),
            rng.choice([25.0, 50.0, 300.0]), rng.choice([0.0, 5.0]))


KIND = Function(function_name="ring_allreduce_time_ms",
                signature="(m_gb, n, bw_gbs, latency_us)", cases=draw,
                edge_cases=((2.0, 8, 50.0, 0.0), (1.0, 1, 50.0, 5.0), (1.0, 0, 50.0, 0.0)),
                n_random=12, time_limit_s=0.5)
TOTAL = 15  # 3 edge cases + 12 random


def grade(answer: object):
    return KIND.grade(answer, reference, {}, ())


def test_a_correct_function_passes_every_case() -> None:
    def mine(m, n, bw, lat):
        if n <= 0:
            raise ValueError("no GPUs")
        return 2 * m * (n - 1) / n / bw * 1e3 + 2 * (n - 1) * lat * 1e-3

    verdict = grade(mine)
    assert verdict.status == "correct"
    assert verdict.score == 1.0
    assert verdict.yours == f"mine: {TOTAL} of {TOTAL} cases"


def test_numpy_results_compare_as_numbers() -> None:
    np = pytest.importorskip("numpy")

    def mine(m, n, bw, lat):
        if n < 1:
            raise ValueError
        return np.float32(reference(m, n, bw, lat))

    assert same(np.float32(70.0), 70.0, 1e-6)
    assert Function(function_name="f", signature="()", cases=draw, rel_tol=1e-6,
                    n_random=5).grade(mine, reference, {}, ()).passed


def test_the_first_failing_input_is_shown() -> None:
    def doubled(m, n, bw, lat):  # counts both phases twice
        if n < 1:
            raise ValueError("n")
        return 2 * reference(m, n, bw, lat)

    verdict = grade(doubled)
    assert verdict.status == "wrong"
    # Edge case 1: 14 steps * 0.25 GB / 50 GB/s = 70 ms; doubled: 140 ms.
    assert verdict.message == ("ring_allreduce_time_ms(2.0, 8, 50.0, 0.0) returned 140.0; "
                               "expected 70.0.")
    # Only the N = 1 (0 ms) and N = 0 (ValueError) edge cases pass.
    assert verdict.score == pytest.approx(2 / TOTAL)
    assert verdict.details[0] == f"2 of {TOTAL} cases passed."


def test_impossible_input_must_raise_value_error() -> None:
    def no_check(m, n, bw, lat):
        return 0.0 if n == 0 else reference(m, n, bw, lat)

    verdict = grade(no_check)
    assert "ring_allreduce_time_ms(1.0, 0, 50.0, 0.0) returned 0.0" in verdict.message
    assert "expected it to raise ValueError" in verdict.message
    assert "n must be >= 1, got 0" in verdict.message
    assert verdict.score == pytest.approx((TOTAL - 1) / TOTAL)


def test_a_value_error_subclass_is_fine() -> None:
    class NoGpus(ValueError):
        pass

    def mine(m, n, bw, lat):
        if n < 1:
            raise NoGpus("none")
        return reference(m, n, bw, lat)

    assert grade(mine).passed


def test_other_errors_are_reported_by_type_and_message() -> None:
    def crashes(m, n, bw, lat):
        return steps * m  # noqa: F821 -- the learner's NameError

    verdict = grade(crashes)
    assert verdict.message.startswith("ring_allreduce_time_ms(2.0, 8, 50.0, 0.0) raised "
                                      "NameError: name 'steps' is not defined; expected 70.0")
    assert "Traceback" not in verdict.message


def test_wrong_arity_shows_the_signature() -> None:
    verdict = grade(lambda m, n: 0.0)
    assert "TypeError" in verdict.message
    assert ("The function should be: def ring_allreduce_time_ms(m_gb, n, bw_gbs, latency_us)"
            in verdict.details)


def test_sys_exit_is_caught() -> None:
    import sys

    verdict = grade(lambda *args: sys.exit(3))
    assert verdict.status == "wrong"
    assert "raised SystemExit: 3" in verdict.message


def test_endless_loop_times_out_and_stops_the_check() -> None:
    def forever(*args):
        while True:
            pass

    start = time.monotonic()
    verdict = grade(forever)
    assert time.monotonic() - start < 2.0  # one 0.5 s time-out, then no more calls
    assert "did not finish within 0.5 s" in verdict.message
    assert verdict.score == 0.0
    assert verdict.details == (f"0 of {TOTAL} cases passed.",
                               f"The other {TOTAL - 1} cases were not run after the time-out.")


def test_the_cases_are_the_same_on_every_check() -> None:
    assert KIND.test_cases() == KIND.test_cases()
    assert KIND.test_cases()[:3] == [(2.0, 8, 50.0, 0.0), (1.0, 1, 50.0, 5.0), (1.0, 0, 50.0, 0.0)]
    assert len(KIND.test_cases()) == TOTAL


def test_arguments_are_copied_so_the_learner_cannot_change_them() -> None:
    def ref_sum(xs):
        return float(sum(xs))

    def mine(xs):
        total = float(sum(xs))
        xs.clear()
        return total

    kind = Function(function_name="total", signature="(xs)", cases=lambda r: ([r.random()],),
                    edge_cases=(([1.0, 2.0],),), n_random=3)
    assert kind.grade(mine, ref_sum, {}, ()).passed


@pytest.mark.parametrize(("answer", "words"), [
    (70.0, ["Pass the function itself", "without parentheses", "a float", "calling it"]),
    ("ring_allreduce_time_ms", ["its name without quotes"]),
    (None, ["Pass the function itself", "got None"]),
])
def test_non_callables_are_invalid(answer: object, words: list[str]) -> None:
    verdict = grade(answer)
    assert verdict.status == "invalid"
    for word in words:
        assert word in verdict.message


@pytest.mark.parametrize(("got", "want", "result"), [
    (70, 70.0, True), (70.00000001, 70.0, True), (71.0, 70.0, False), (True, 1.0, False),
    ("70", 70.0, False), ([1.0, 2.0], (1.0, 2.0), True), ((1.0,), (1.0, 2.0), False),
    ({"a": 1.0}, {"a": 1}, True), (None, None, True), ("x", "x", True), (False, False, True),
    (0, False, False), (float("nan"), float("nan"), True),
])
def test_same(got: object, want: object, result: bool) -> None:
    assert same(got, want, 1e-6) is result


def test_describe() -> None:
    assert KIND.describe() == ("a Python function: def ring_allreduce_time_ms"
                               "(m_gb, n, bw_gbs, latency_us)")


# -- the time limit itself ----------------------------------------------------------------
def _spin() -> None:
    while True:
        pass


def test_time_limit_in_the_main_thread_stops_an_endless_loop() -> None:
    start = time.monotonic()
    outcome = call_with_time_limit(_spin, (), 0.3)
    assert outcome.timed_out
    assert time.monotonic() - start < 2.0


def test_time_limit_survives_a_learner_catching_exception() -> None:
    def stubborn() -> None:
        try:
            _spin()
        except Exception:
            pass

    assert call_with_time_limit(stubborn, (), 0.3).timed_out


def test_time_limit_in_a_worker_thread() -> None:
    box: list[Any] = []
    start = time.monotonic()
    worker = threading.Thread(target=lambda: box.append(call_with_time_limit(_spin, (), 0.3)))
    worker.start()
    worker.join(5)
    assert box and box[0].timed_out
    assert time.monotonic() - start < 2.0


def test_time_limit_reports_values_and_errors() -> None:
    assert call_with_time_limit(lambda x: x * 2, (21,), 1.0).value == 42
    outcome = call_with_time_limit(lambda: 1 / 0, (), 1.0)
    assert isinstance(outcome.error, ZeroDivisionError)
    assert not outcome.returned
    with pytest.raises(ValueError):
        call_with_time_limit(lambda: 0, (), 0)


def test_time_limit_gives_back_an_earlier_timer() -> None:
    import signal

    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.6)
        call_with_time_limit(lambda: None, (), 0.2)
        time.sleep(1.0)
        assert fired == [1]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_further_failing_inputs_are_flagged_hidden() -> None:
    from autograder.kinds.base import HiddenInput

    verdict = grade(lambda *args: -1.0)
    hidden = [d for d in verdict.details if isinstance(d, HiddenInput)]
    assert hidden and all(d.startswith("Also:") for d in hidden)
    assert not isinstance(verdict.details[0], HiddenInput)  # "n of m cases passed."
