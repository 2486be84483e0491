"""The workbook works with no network: every learner notebook runs with none at all.

The test starts this file as a script inside a new network namespace (``unshare --net``),
which has a loopback interface and nothing else: no route leaves the machine, so
anything that reaches for the network fails there. Inside, the script brings loopback up
(Jupyter's kernel and client talk over 127.0.0.1) and runs every chapter's learner
notebook top to bottom in a fresh kernel with nbclient. The kernels load
``netaudit/sitecustomize.py``, which logs every socket connection or name lookup aimed
at another machine; the test asserts that log is empty. A control notebook that does
reach for an outside address shows the log catches it, so an empty log means something.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HOOK_DIR = HERE / "netaudit"
# TEST-NET-1 (RFC 5737): reserved for documentation, never routed anywhere.
OUTSIDE_ADDRESS = "192.0.2.1"
# Per cell (each takes a second or two). Kept short on purpose: nbclient sometimes misses
# the wake-up for the reply to a cell that opens many widgets and then sits until this
# time-out, when it finds the reply and carries on (jupyter/nbclient#312, open).
KERNEL_TIMEOUT_S = 60


# -- inside the namespace -----------------------------------------------------------


def bring_loopback_up() -> None:
    """Set the IFF_UP flag on ``lo`` (a new namespace starts with it down), as ``ip`` would."""
    import fcntl  # POSIX only: imported here so the module still loads elsewhere
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1  # <linux/sockios.h>, <net/if.h>
    layout = "16sh22x"  # struct ifreq: 16-byte name, then a 24-byte union (flags first)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(layout, b"lo", 0)
        flags = struct.unpack(layout, fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack(layout, b"lo", flags | iff_up))


def outside_reachable() -> str:
    """Try to open a TCP connection to an outside address; say how it failed."""
    try:
        socket.create_connection((OUTSIDE_ADDRESS, 80), timeout=3).close()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return "connected"


def execute(path: Path, workdir: Path) -> dict[str, Any]:
    """Run one notebook in a fresh kernel: its error outputs and where the time went."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.time()
    client = NotebookClient(nb, timeout=KERNEL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    errors = []
    try:
        client.execute()
    except Exception as exc:  # a failing cell, a time-out, a dead kernel: report, go on
        last_line = (str(exc).strip().splitlines() or [""])[-1]
        errors.append(f"{type(exc).__name__}: {last_line}")
    errors += [f"{o.get('ename')}: {o.get('evalue')}" for c in nb.cells
               for o in c.get("outputs", []) if o.get("output_type") == "error"]
    return {"errors": errors, "seconds": round(time.time() - start, 1),
            "cells": cell_timings(nb, start)}


def cell_timings(nb: Any, start: float) -> dict[str, Any]:
    """Seconds from start to the first cell, and the slowest cell (nbclient's timestamps)."""
    def moment(text: str) -> float:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

    spans = [(i, moment(c.metadata.execution["iopub.execute_input"]),
              moment(c.metadata.execution["shell.execute_reply"]))
             for i, c in enumerate(nb.cells) if "execution" in c.get("metadata", {})]
    if not spans:
        return {}
    index, begin, end = max(spans, key=lambda span: span[2] - span[1])
    return {"to_first_cell_s": round(spans[0][1] - start, 1),
            "slowest_cell": index, "slowest_cell_s": round(end - begin, 1)}


def control_notebook(path: Path) -> Path:
    """A one-cell notebook that tries to reach the outside address (and is refused)."""
    import nbformat

    cell = ("import socket\ntry:\n"
            f"    socket.create_connection(({OUTSIDE_ADDRESS!r}, 80), timeout=2)\n"
            "except OSError as exc:\n    print('refused:', exc)\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbformat.write(nb, path)
    return path


def audit_kernels(log: Path, loaded: Path) -> None:
    """Make every process started from now on load the audit hook, logging to ``log``."""
    paths = [str(HOOK_DIR), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    os.environ["NETAUDIT_LOG"] = str(log)
    os.environ["NETAUDIT_LOADED"] = str(loaded)


def run_inside(out: Path) -> dict[str, Any]:
    """Everything done inside the namespace; returns the findings as plain data."""
    from workbook.build.notebooks import learner_path
    from workbook.outline import CHAPTERS

    report: dict[str, Any] = {"interfaces": sorted(n for _, n in socket.if_nameindex()),
                              "outside_before": outside_reachable()}
    bring_loopback_up()
    report["outside_after"] = outside_reachable()
    audit_kernels(out / "network.log", out / "loaded.log")
    report["notebooks"] = {}
    for chapter in CHAPTERS:
        workdir = out / chapter.stem
        workdir.mkdir()
        report["notebooks"][chapter.stem] = execute(learner_path(chapter), workdir)
    audit_kernels(out / "control.log", out / "control-loaded.log")
    report["control_errors"] = execute(control_notebook(out / "control.ipynb"), out)["errors"]
    return report


# -- the test ---------------------------------------------------------------------


def namespace_command() -> list[str]:
    """``unshare --net``, mapping this user to root in a user namespace when not root."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not installed, so no network namespace can be made")
    command = [unshare, "--net"]
    if os.geteuid() != 0:
        command.append("--map-root-user")
    probe = subprocess.run([*command, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"this system does not permit a new network namespace ({' '.join(command)}"
                    f" failed: {probe.stderr.strip()})")
    return command


def lines_of(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_offline(out: Path) -> dict[str, Any]:
    """Run :func:`run_inside` in a new network namespace; its report."""
    if sys.platform != "linux":
        pytest.skip("network namespaces are a Linux feature")
    command = namespace_command()
    env = {**os.environ, "WORKBOOK_HOME": str(out / "home")}
    for flag in ("NBGRADER_EXECUTION", "WORKBOOK_GRADING", "NETAUDIT_LOG"):
        env.pop(flag, None)
    done = subprocess.run([*command, sys.executable, str(Path(__file__)), str(out)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return dict(json.loads((out / "report.json").read_text()))


# One test, not four: the run takes a minute, and test workers (pytest -n) would each
# repeat it for the tests they were given.
def test_learner_notebooks_run_offline_and_reach_for_nothing(tmp_path: Path) -> None:
    from workbook.outline import CHAPTERS

    report = run_offline(tmp_path)
    # The namespace: loopback only, and no route out (the refusal is immediate, not a
    # time-out), both before and after loopback is brought up.
    assert report["interfaces"] == ["lo"]
    assert (report["outside_before"], report["outside_after"]) == ("ENETUNREACH", "ENETUNREACH")
    # Every chapter ran top to bottom without an error.
    assert sorted(report["notebooks"]) == sorted(c.stem for c in CHAPTERS)
    failing = {stem: r["errors"] for stem, r in report["notebooks"].items() if r["errors"]}
    assert failing == {}
    # The hook was active in every notebook's kernel, and none reached for the network.
    kernels = [p for p in lines_of(tmp_path / "loaded.log")
               if "ipykernel_launcher" in " ".join(p["argv"])]
    assert len(kernels) >= len(CHAPTERS)
    assert lines_of(tmp_path / "network.log") == []
    # The control: a kernel that does reach out is caught (create_connection resolves the
    # address, then connects: both are logged), and its own cell handles the refusal.
    assert report["control_errors"] == []
    caught = {(c["event"], c["host"]) for c in lines_of(tmp_path / "control.log")}
    assert caught == {("socket.getaddrinfo", repr(OUTSIDE_ADDRESS)),
                      ("socket.connect", repr(OUTSIDE_ADDRESS))}


if __name__ == "__main__":
    # Run by the fixture above inside the network namespace: python test_offline.py OUT_DIR
    out_dir = Path(sys.argv[1])
    (out_dir / "report.json").write_text(json.dumps(run_inside(out_dir), indent=1))
