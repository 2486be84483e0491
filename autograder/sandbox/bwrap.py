"""The bubblewrap command line that wraps each warm worker, and whether bubblewrap works here.

Isolation of learner code comes from bubblewrap (``bwrap``, the sandbox Flatpak uses), not
from code inside the job's interpreter. Each warm worker starts as::

    bwrap <minimal read-only root> <private /tmp> --unshare-all --unshare-user
          --disable-userns --uid 65534 --gid 65534 --die-with-parent --new-session
          --as-pid-1 --clearenv ... python -I -c <bootstrap> /opt/wb-sandbox

What the worker (and every job it forks) sees:

* a read-only root holding only ``/usr`` (with the usual ``/lib``, ``/bin`` links), the
  interpreter's installation and the virtual environment (the standard library and the
  packages a job may import, numpy among them), and a private copy of the sandbox's own
  modules at ``/opt/wb-sandbox`` (:func:`stage_sandbox_code`). Not the project folder, not
  the reference solutions, not the submissions, not the output folder; any of those that
  happens to lie inside a bound folder (a project installed into the environment's
  site-packages) is covered by an empty, read-only mount;
* a private ``/tmp`` of :data:`TMP_BYTES` (memory-backed; gone when the worker ends, and
  emptied by the worker after every job), a minimal ``/dev`` that is read-only (so no
  ``/dev/shm`` to fill), a fresh ``/proc``;
* new user, PID, IPC, network, UTS and cgroup namespaces: no network interface but a down
  loopback, no host sockets (nothing of ``/run`` or ``/var`` is mounted), no other
  process of the machine; inside, uid 65534 with no capabilities and no way to make a
  nested user namespace;
* ``--die-with-parent``: when the grader dies, so does every sandboxed process.

Memory and processes of the whole worker are bounded with rlimits set before ``bwrap``
starts (:func:`worker_rlimits`), on top of each job's own rlimits.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

from autograder.sandbox import diagnose

SANDBOX_CODE = "/opt/wb-sandbox"  # where the worker finds its own modules inside
TMP_BYTES = 64 * 1024 * 1024       # the private /tmp of one worker
SANDBOX_UID = 65534                # nobody, inside the user namespace
WORKER_BASE_MB = 1024              # the worker's own address space (numpy loaded), generous
WORKER_PROCESSES = 16              # the worker and its helpers, on top of the job's limit
# Every sandboxed process sees only this environment (none of the grader's variables). One
# thread for BLAS: a learner's process is one of many running side by side, and a library
# that starts a thread per core costs each one about 0.1 s of CPU before it does anything.
SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent",
    "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
}
_SEARCH = ("/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap")


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or not permitted here; grading must not go on quietly."""


def bwrap_path() -> str | None:
    found = shutil.which("bwrap")
    if found:
        return found
    return next((p for p in _SEARCH if os.access(p, os.X_OK)), None)


def _roots(python: str) -> list[str]:
    """The folders holding the interpreter, its standard library and installed packages."""
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  str(Path(python).resolve().parent.parent)]
    roots: list[str] = []
    for path in sorted({os.path.realpath(c) for c in candidates} | {os.path.abspath(sys.prefix)}):
        if path in ("/", "/usr") or path.startswith("/usr/"):
            continue  # /usr is bound whole
        if not any(path == r or path.startswith(r + "/") for r in roots):
            roots.append(path)
    return roots


def interpreter_entries_in_tmp(python: str = sys.executable) -> frozenset[str]:
    """The names a job sees in its fresh /tmp besides its own scratch: the first folder of
    each interpreter folder that lives under /tmp (a project cloned to /tmp/x binds
    /tmp/x/.venv, so a job's /tmp shows "x"). Empty for an interpreter anywhere else."""
    return frozenset(Path(root).parts[2] for root in _roots(python)
                     if root.startswith("/tmp/"))


def _system_links() -> list[str]:
    """``/lib``, ``/lib64``, ``/bin``, ``/sbin`` as on the host: links into /usr, or folders."""
    args: list[str] = []
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    return args


def _parents(targets: Iterable[str]) -> list[str]:
    """Folders above the mount points, traversable by the job's user (bubblewrap would make
    them 0700, owned by the worker)."""
    made: list[str] = []
    for target in targets:
        parts = Path(target).parents
        for parent in reversed([str(p) for p in parts if str(p) != "/"]):
            if parent not in made:
                made.append(parent)
    perms = ["--perms", "0755"] if supports("--perms") else []  # --dir alone is 0755
    return [arg for folder in made for arg in (*perms, "--dir", folder)]


def _hide(hidden: Iterable[str], roots: Iterable[str]) -> list[str]:
    """Cover each hidden path that lies inside a bound folder with something empty."""
    args: list[str] = []
    bound = [*roots, "/usr"]
    for path in sorted({os.path.realpath(p) for p in hidden}):
        if not any(path == r or path.startswith(r + "/") for r in bound):
            continue
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    return args


# A grader running as root: the worker stays root inside (in new PID, IPC, network, UTS
# and mount namespaces) with only the capabilities it needs to run each job as the real,
# unprivileged ``nobody`` (whose processes the kernel's per-user process limit counts;
# inside a user namespace mapped to root they would count as root's and be exempt).
ROOT_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_FOWNER",
                     "CAP_DAC_OVERRIDE", "CAP_KILL")
# A grading worker (``fresh_world``) also keeps CAP_SYS_ADMIN (in its own user namespace when
# not root) to give each job its own IPC and mount namespaces (autograder.sandbox.world);
# the job process drops every capability before learner code runs, and a seccomp filter
# then refuses it any new namespace. Other users of this command get no such capability.
WORLD_CAPABILITIES = ("CAP_SYS_ADMIN",)


@cache
def supports(option: str, bwrap: str | None = None) -> bool:
    """Whether this bubblewrap knows ``option`` (``--size`` and ``--disable-userns`` came
    with 0.8.0; older ones still isolate, with an unbounded /tmp and nested namespaces
    allowed)."""
    try:
        done = subprocess.run([bwrap or bwrap_path() or "bwrap", "--help"],
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return option.encode() in done.stdout + done.stderr


def _namespaces(fresh_world: bool, as_nobody: bool = False) -> list[str]:
    common = ["--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts",
              "--unshare-cgroup-try"]
    nested = ["--disable-userns"] if supports("--disable-userns") else []
    if as_nobody:  # root or not: a user namespace, nobody inside, no capabilities
        return [*common, "--unshare-user", *nested, "--uid", str(SANDBOX_UID), "--gid",
                str(SANDBOX_UID), "--cap-drop", "ALL"]
    world = [arg for cap in WORLD_CAPABILITIES if fresh_world for arg in ("--cap-add", cap)]
    if os.geteuid() == 0:
        caps = [arg for cap in ROOT_CAPABILITIES for arg in ("--cap-add", cap)]
        return [*common, "--cap-drop", "ALL", *caps, *world]
    # Not root: a user namespace (the grader's own uid inside), no nested ones.
    return [*common, "--unshare-user", *nested, *world]


def command(python: str, code_dir: str, hidden: Iterable[str] = (),
            bwrap: str | None = None, fresh_world: bool = False,
            as_nobody: bool = False) -> list[str]:
    """The command starting one warm worker inside bubblewrap (ends with ``-- python``);
    ``fresh_world``: a grading worker, which gives each job a world of its own;
    ``as_nobody``: the server of a lab's ranks' processes, whose children run learner code
    side by side (:mod:`autograder.sandbox.rank_server`): ``nobody`` in a user namespace of
    its own with no capabilities and no nested user namespace, so that it can create no
    namespace, as root as when not; nothing writable, ``/tmp`` included, so that no child
    can leave anything for another; and no ``--die-with-parent`` (which would end it with
    the thread that started it): it ends when its socket to the grader closes."""
    roots = _roots(python)
    args = [bwrap or bwrap_path() or "bwrap", "--ro-bind", "/usr", "/usr", *_system_links(),
            "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
            *(["--size", str(TMP_BYTES)] if supports("--size") else []),
            "--tmpfs", "/tmp"]  # first, so that an interpreter under /tmp is bound on top
    args += _parents([*roots, SANDBOX_CODE])
    for root in roots:
        args += ["--ro-bind", root, root]
    args += _hide(hidden, roots)
    read_only = ["--remount-ro", "/tmp"] if as_nobody else ["--die-with-parent"]
    return [*args, "--ro-bind", code_dir, SANDBOX_CODE, "--remount-ro", "/",
            *_namespaces(fresh_world, as_nobody), *read_only, "--new-session",
            "--as-pid-1", "--clearenv", *_environment(), "--chdir", "/tmp", "--", python]


def _environment() -> list[str]:
    return [arg for key, value in SANDBOX_ENV.items() for arg in ("--setenv", key, value)]


def stage_sandbox_code() -> str:
    """A private folder holding a copy of this package as ``autograder.sandbox`` (with an
    empty ``autograder`` above it): all the worker needs of the project."""
    stage = tempfile.mkdtemp(prefix="wb-sandbox-code-")
    package = Path(stage, "autograder", "sandbox")
    package.mkdir(parents=True)
    Path(stage, "autograder", "__init__.py").write_text("")
    for source in Path(__file__).parent.glob("*.py"):
        shutil.copyfile(source, package / source.name)
    for path in Path(stage).rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    os.chmod(stage, 0o755)  # bwrap reads it as root; inside it is read-only anyway
    return stage


def worker_rlimits(job_memory_mb: int, job_processes: int,
                   n_workers: int = 1) -> Callable[[], None]:
    """A ``preexec_fn`` bounding the whole worker: address space per process, and processes.
    RLIMIT_NPROC counts per user: each job's own limit counts the processes of its worker's
    user namespace; this one bounds all sandboxed processes of the batch together."""
    memory = (WORKER_BASE_MB + job_memory_mb) * 1024 * 1024
    # RLIMIT_NPROC counts every process of the user, the ones already running too.
    processes = n_workers * (job_processes + WORKER_PROCESSES) + WORKER_PROCESSES \
        + diagnose.user_processes()

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if os.geteuid() != 0:  # root is exempt; its jobs run as nobody with their own limit
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    return apply


@cache
def unavailable_reason(python: str = sys.executable) -> str:
    """Why bubblewrap cannot sandbox a worker here ("" when it can): tried for real once,
    and a failure explained as precisely as the machine allows (:mod:`.diagnose`)."""
    path = bwrap_path()
    if path is None:
        return ("bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get "
                "install bubblewrap)")
    unreadable = diagnose.interpreter_problem(python)
    if unreadable:
        return unreadable
    stage = stage_sandbox_code()
    try:
        probe = [*command(python, stage, bwrap=path), "-I", "-c", "import math"]
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False,
                              preexec_fn=worker_rlimits(64, 16))
    except (OSError, subprocess.SubprocessError) as error:
        return f"bubblewrap could not start ({error})"
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip()[-300:]
        return diagnose.explain_failure(detail or f"exit {done.returncode}")
    return ""
