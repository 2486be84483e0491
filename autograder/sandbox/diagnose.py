"""Why the sandbox cannot start on this machine, said precisely, with the way forward.

The failures an instructor meets on a stock Debian or Ubuntu as an ordinary user:

* user namespaces are blocked: Ubuntu 23.10 and later restrict them through AppArmor
  (``kernel.apparmor_restrict_unprivileged_userns = 1``; an AppArmor profile lets bubblewrap
  use them, :data:`APPARMOR_PROFILE`), older Debian through
  ``kernel.unprivileged_userns_clone = 0``, some hardened systems through
  ``user.max_user_namespaces = 0``;
* the per-user process limit (``ulimit -u``) counts all the user's processes, not only
  the grader's: the grader adds the ones already running (:func:`user_processes`), and says
  so when even that does not fit under the hard limit;
* the interpreter (a virtual environment made by another user, or under a home folder
  others cannot enter) cannot be run by this user.
"""

from __future__ import annotations

import os
import resource

APPARMOR_PROFILE = "scripts/apparmor/bwrap-userns"  # in the project; see docs/instructors.md
_SYSCTLS = ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces")
_NAMESPACE_WORDS = ("namespace", "uid map", "setting up uid", "Operation not permitted",
                    "Permission denied")


def _sysctl(path: str) -> str:
    try:
        with open(path) as file:
            return file.read().strip()
    except OSError:
        return ""


def user_processes(uid: int | None = None) -> int:
    """How many processes (threads counted, as RLIMIT_NPROC does) ``uid`` runs now."""
    uid = os.getuid() if uid is None else uid
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            info = os.stat(f"/proc/{entry}")
            if info.st_uid == uid:
                count += max(1, len(os.listdir(f"/proc/{entry}/task")))
        except OSError:
            continue
    return count


def interpreter_problem(python: str) -> str:
    """Why this user cannot run ``python`` ("" when it can)."""
    real = os.path.realpath(python)
    if os.access(real, os.X_OK) and os.access(real, os.R_OK):
        return ""
    blocked = next((folder for folder in _parents(real) if not os.access(folder, os.X_OK)),
                   real)
    return (f"the Python interpreter {python} ({real}) cannot be run by this user "
            f"(uid {os.getuid()}): {blocked} is closed to it. Make a virtual environment as "
            "this user (python3 -m venv .venv && .venv/bin/pip install -e .), or open the "
            "folders to it (chmod o+x on each folder above the interpreter)")


def _parents(path: str) -> list[str]:
    parts, folders = path.split("/")[1:-1], []
    for i in range(1, len(parts) + 1):
        folders.append("/" + "/".join(parts[:i]))
    return folders


def userns_blocked() -> str:
    """How this machine blocks unprivileged user namespaces, and how to allow them ("" when
    nothing here says it does)."""
    apparmor, clone, most = (_sysctl(path) for path in _SYSCTLS)
    if apparmor == "1":
        return ("unprivileged user namespaces are restricted by AppArmor "
                "(kernel.apparmor_restrict_unprivileged_userns = 1, the default on Ubuntu "
                "23.10 and later). Allow bubblewrap with an AppArmor profile, as root: "
                f"install -m 644 {APPARMOR_PROFILE} /etc/apparmor.d/bwrap-userns && "
                "apparmor_parser -r /etc/apparmor.d/bwrap-userns")
    if clone == "0":
        return ("unprivileged user namespaces are switched off "
                "(kernel.unprivileged_userns_clone = 0). Allow them, as root: sysctl -w "
                "kernel.unprivileged_userns_clone=1 (and in /etc/sysctl.d/ to keep it)")
    if most == "0":
        return ("user namespaces are switched off (user.max_user_namespaces = 0). Allow "
                "them, as root: sysctl -w user.max_user_namespaces=10000 (and in "
                "/etc/sysctl.d/ to keep it)")
    return ""


def explain_failure(detail: str) -> str:
    """The message for a bubblewrap that started and failed with ``detail`` on stderr."""
    if "Resource temporarily unavailable" in detail or "Cannot fork" in detail:
        soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        return (f"bubblewrap could not start a process: this user already runs "
                f"{user_processes()} processes and the per-user limit (ulimit -u) is {soft} "
                f"(hard {hard}); it counts all of the user's processes. Close some, or raise "
                f"the limit, then grade again ({detail})")
    if os.getuid() != 0 and any(word in detail for word in _NAMESPACE_WORDS):
        blocked = userns_blocked()
        if blocked:
            return f"bubblewrap cannot make its namespaces here: {blocked} ({detail})"
    return f"bubblewrap is not permitted here ({detail})"
