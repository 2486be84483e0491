"""Run untrusted learner code: warm, isolated worker processes and a plain-JSON protocol.

The batch grader hands a :class:`WorkerPool` one :class:`Job` per submission (the answer
cells plus :class:`ValueRequest`, :class:`CallRequest` and :class:`SourceRequest` for
what it wants back) and receives a :class:`JobResult` of plain data, which it compares
with ``solutions`` in its own process. Nothing produced by learner code is ever unpickled
or evaluated by the grader.

Layers, outermost first:

* :mod:`.pool`      the grader's side: start, feed and replace warm workers;
* :mod:`.bwrap`     the bubblewrap sandbox around each worker (the isolation that counts);
* :mod:`.worker`    a warm process per pool slot: namespaces, fork per job, wall clock;
* :mod:`.limits`    OS isolation: namespaces, rlimits, privilege drop, fd hygiene;
* :mod:`.runner`    inside the job process: run cells, answer requests, bounded output;
* :mod:`.plain`     value -> plain JSON without trusting the value;
* :mod:`.classify`  process facts + report -> status, message, one outcome per request;
* :mod:`.protocol`  the shared vocabulary and its JSON wire form.

Linux only: fork, rlimits, ``unshare(2)`` namespaces, and pidfds (kernel 5.3 or later).
"""

from autograder.sandbox.bwrap import SandboxUnavailable
from autograder.sandbox.limits import Isolation
from autograder.sandbox.pool import WorkerPool
from autograder.sandbox.protocol import (
    OUTCOME_TYPES,
    STATUSES,
    CallRequest,
    CellError,
    Job,
    JobResult,
    JobStatus,
    Limits,
    Outcome,
    OutcomeType,
    Request,
    SourceRequest,
    ValueRequest,
)

__all__ = [
    "OUTCOME_TYPES", "STATUSES", "CallRequest", "CellError", "Isolation", "Job", "JobResult",
    "JobStatus", "Limits", "Outcome", "OutcomeType", "Request", "SandboxUnavailable",
    "SourceRequest", "ValueRequest", "WorkerPool",
]
