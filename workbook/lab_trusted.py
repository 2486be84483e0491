"""The trusted process of a lab check made from a learner's kernel.

``python -I -m workbook.lab_trusted`` reads one request (JSON on stdin: the exercise id,
the learner's function as a bundle, the grading seed), runs the simulator and the
verifier here, in an interpreter the learner's code never ran in, with the ranks in their
own sandboxed process, and prints the verdict's fields as JSON. The kernel only displays
them: a patch in the kernel's namespace reaches neither the simulator, nor the log, nor
the verifier, nor the verdict.
"""

from __future__ import annotations

import json
import sys

from autograder.kinds.lab import verdict_fields
from workbook.records import lookup


def main() -> None:
    request = json.loads(sys.stdin.buffer.read(64 << 20).decode("utf-8"))
    kind = lookup(str(request["exercise"])).answer_kind
    grade_bundle = getattr(kind, "grade_bundle", None)  # what a lab kind offers
    if grade_bundle is None:
        raise SystemExit(f"{request['exercise']} is not a lab")
    verdict = grade_bundle(request["bundle"], int(request["seed"]))
    sys.stdout.write(json.dumps(verdict_fields(verdict)))


if __name__ == "__main__":
    main()
