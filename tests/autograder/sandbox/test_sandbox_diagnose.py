"""Each way the sandbox fails to start on an instructor's machine is named, with the fix."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from autograder.sandbox import diagnose

NAMESPACE_ERROR = ("bwrap: No permissions to creating new namespace, likely because the "
                   "kernel does not allow non-privileged user namespaces.")


def sysctls(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    def read(path: str) -> str:
        return next((v for k, v in values.items() if path.endswith(k)), "")
    monkeypatch.setattr(diagnose, "_sysctl", read)
    monkeypatch.setattr(diagnose.os, "getuid", lambda: 1000)


def test_ubuntus_apparmor_restriction_names_the_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    sysctls(monkeypatch, apparmor_restrict_unprivileged_userns="1")
    message = diagnose.explain_failure(NAMESPACE_ERROR)
    assert "restricted by AppArmor" in message and diagnose.APPARMOR_PROFILE in message
    assert "apparmor_parser -r /etc/apparmor.d/bwrap-userns" in message
    assert (Path(__file__).parents[3] / diagnose.APPARMOR_PROFILE).is_file()


@pytest.mark.parametrize("name, fix", [
    ("unprivileged_userns_clone", "kernel.unprivileged_userns_clone=1"),
    ("max_user_namespaces", "user.max_user_namespaces=10000"),
])
def test_other_switches_name_their_sysctl(monkeypatch: pytest.MonkeyPatch, name: str,
                                          fix: str) -> None:
    sysctls(monkeypatch, **{name: "0"})
    assert fix in diagnose.explain_failure(NAMESPACE_ERROR)


def test_the_process_limit_counts_all_the_users_processes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    message = diagnose.explain_failure("bwrap: Creating new namespace failed: Resource "
                                       "temporarily unavailable")
    assert "per-user limit (ulimit -u)" in message and "counts all of the user" in message
    assert diagnose.user_processes() >= 1  # this test's own process at least


def test_an_interpreter_behind_a_closed_folder(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    (closed / "bin").mkdir(parents=True)
    python = closed / "bin" / "python"
    python.write_text("")
    python.chmod(0o755)
    closed.chmod(0)
    try:
        message = diagnose.interpreter_problem(str(python))
    finally:
        closed.chmod(stat.S_IRWXU)
    if os.geteuid() == 0:
        assert message == ""  # root enters every folder
    else:
        assert f"{closed} is closed to it" in message and "python3 -m venv" in message
