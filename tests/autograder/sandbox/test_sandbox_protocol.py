"""The sandbox's wire form: lossless for plain data, strict about shape."""

from __future__ import annotations

import json
import math

import pytest

from autograder.sandbox.protocol import (
    CallRequest,
    CellError,
    Job,
    JobResult,
    JobStatus,
    Limits,
    Outcome,
    OutcomeType,
    ProtocolError,
    SourceRequest,
    ValueRequest,
    check_bounds,
    decode_tree,
    encode_tree,
    read_wire,
    unavailable_outcomes,
)


def test_non_finite_floats_travel_as_markers_and_come_back() -> None:
    wire = encode_tree([1.5, math.inf, -math.inf, math.nan])
    assert wire[:3] == [1.5, {"$float": "inf"}, {"$float": "-inf"}]
    assert wire[3] == {"$float": "nan"}
    back = decode_tree(json.loads(json.dumps(wire, allow_nan=False)))
    assert back[:3] == [1.5, math.inf, -math.inf] and math.isnan(back[3])


def test_a_learners_dict_shaped_like_the_marker_stays_a_dict() -> None:
    honest = {"$float": "nan", "$$x": 1, "plain": 2}
    wire = encode_tree(honest)
    assert wire == {"$$float": "nan", "$$$x": 1, "plain": 2}  # one extra "$" per $-key
    assert decode_tree(wire) == honest


def test_tuples_become_lists_and_nesting_survives() -> None:
    assert decode_tree(encode_tree((1, (2, [3, {"a": (4,)}])))) == [1, [2, [3, {"a": [4]}]]]


@pytest.mark.parametrize("bad", [{1: "int key"}, {1, 2}, object(), b"bytes"])
def test_encode_refuses_what_json_cannot_carry(bad: object) -> None:
    with pytest.raises(TypeError):
        encode_tree(bad)


@pytest.mark.parametrize("bad", [{"$float": "NaN!"}, {"$x": 1}, {"k": {1, 2}}])
def test_decode_refuses_malformed_trees(bad: object) -> None:
    with pytest.raises(ProtocolError):
        decode_tree(bad)


def test_limits_reject_nonsense_and_round_trip() -> None:
    with pytest.raises(ValueError, match="wall_s"):
        Limits(wall_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=-1)
    with pytest.raises(ValueError, match="processes"):
        Limits(processes=True)  # a bool is not a count
    limits = Limits(cpu_s=3, wall_s=7.5, output_bytes=10)
    assert Limits.from_wire(json.loads(json.dumps(limits.to_wire()))) == limits
    with pytest.raises(ProtocolError):
        Limits.from_wire({"cpu_s": 1, "surprise": 2})


def test_job_round_trips_including_call_arguments() -> None:
    job = Job("alice/ch01", ["x = 1", "def f(a, b): return a + b"],
              [ValueRequest("x"), CallRequest("f", [(1, 2), (math.inf, [3])]),
               SourceRequest("f")])
    back = Job.from_wire(json.loads(json.dumps(job.to_wire(), allow_nan=False)))
    assert back == job
    assert back.requests[1] == CallRequest("f", ((1, 2), (math.inf, [3])))


def test_job_validation() -> None:
    with pytest.raises(ValueError, match="Python variable"):
        ValueRequest("not a name")
    with pytest.raises(ValueError, match="duplicate"):
        Job("j", [], [ValueRequest("x"), ValueRequest("x")])
    with pytest.raises(ValueError, match="strings"):
        Job("j", [b"x = 1"])  # type: ignore[list-item]
    # A value and a call of the same name are different requests.
    Job("j", [], [ValueRequest("f"), CallRequest("f", [()])])


def test_job_result_round_trips() -> None:
    result = JobResult(
        "j", "output_limit", (CellError(2, "ValueError", "bad", 3),),
        values={"x": Outcome("value", {"a": [1.0, math.nan]}), "y": Outcome("missing", None,
                                                                           "y is not defined")},
        calls={"f": (Outcome("value", 2), Outcome("raised", None, "ValueError: no",
                                                  "ValueError"))},
        sources={"f": Outcome("value", "def f(): ...")}, stdout_tail="hi",
        message="printed too much", wall_s=0.25, cpu_s=0.125,
    )
    back = JobResult.from_wire(json.loads(json.dumps(result.to_wire(), allow_nan=False)))
    assert math.isnan(back.values["x"].value["a"][1])
    assert back.values["x"].value["a"][0] == 1.0
    assert back.values["y"] == result.values["y"]
    assert back.calls == result.calls and back.sources == result.sources
    assert (back.cell_errors, back.status, back.wall_s) == (result.cell_errors, "output_limit",
                                                            0.25)


@pytest.mark.parametrize("tree", [
    [], {"job_id": "j"}, {"job_id": "j", "status": "fine", "cell_errors": [], "values": {},
                          "calls": {}, "sources": {}, "stdout_tail": "", "message": "",
                          "wall_s": 0, "cpu_s": 0},
])
def test_malformed_results_raise_protocol_error(tree: object) -> None:
    with pytest.raises(ProtocolError):
        JobResult.from_wire(tree)


def test_outcome_from_wire_rejects_unknown_kinds_and_bad_cell_errors() -> None:
    with pytest.raises(ProtocolError):
        Outcome.from_wire({"type": "value_but_trust_me", "value": 1})
    with pytest.raises(ProtocolError):
        CellError.from_wire({"cell": "0", "error_type": "E", "message": "m", "line": None})


def test_unavailable_outcomes_cover_every_request() -> None:
    job = Job("j", ["pass"], [ValueRequest("x"), CallRequest("f", [(1,), (2,)]),
                              SourceRequest("g")])
    result = unavailable_outcomes(job, "the worker died")
    assert result.status == "crashed" and result.message == "the worker died"
    assert result.values["x"].type == "unavailable"
    assert [o.type for o in result.calls["f"]] == ["unavailable"]
    assert result.sources["g"].message == "the worker died"


@pytest.mark.parametrize("text, problem", [
    ("[" * 500 + "]" * 500, "nested deeper than 100 levels"),
    ("[" * 100_000 + "]" * 100_000, "nested"),     # past what json itself can parse
    ('{"a": NaN}', "NaN is not allowed"),
    ("{not json", "not JSON"),
])
def test_untrusted_json_is_read_within_bounds(text: str, problem: str) -> None:
    """Whatever a sandboxed process writes, reading it raises ProtocolError, never
    RecursionError, and in time linear in its length."""
    with pytest.raises(ProtocolError, match=problem):
        read_wire(text)
    assert read_wire("[" * 100 + "]" * 100) is not None  # the bound itself is accepted


def test_a_wide_tree_is_refused_past_its_node_budget() -> None:
    check_bounds(list(range(999)), max_nodes=1000)
    with pytest.raises(ProtocolError, match="more than 1000 items"):
        check_bounds([list(range(600)), list(range(600))], max_nodes=1000)


def test_outcome_kinds_and_job_statuses_are_closed_vocabularies() -> None:
    assert Outcome("raised", type_name="ValueError").type is OutcomeType.RAISED
    assert JobResult("j", "ok").status is JobStatus.OK
    with pytest.raises(ValueError):
        Outcome("guessed")
    with pytest.raises(ValueError):
        JobResult("j", "fine")
