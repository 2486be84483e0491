"""A real JupyterLab server and a real Chromium for the end-to-end tests.

The server runs from the project's own environment on a free localhost port, serves a
temporary copy of the built learner notebooks, keeps its progress log in a temporary
``WORKBOOK_HOME`` and ignores the user's Jupyter configuration. Nothing in it reaches
for the internet: JupyterLab's news feed, update check and PyPI extension manager are
switched off, and so are Chromium's background services.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "workbook" / "notebooks"
ARTIFACTS = ROOT / "test-artifacts" / "e2e"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
    "--no-proxy-server",  # the only server it needs is on 127.0.0.1
]
SERVER_START_S = 120
# JupyterLab front-end settings: never ask to fetch news, never check for updates.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}
# A direct opener: HTTP(S)_PROXY in the environment must not route localhost elsewhere.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class LabServer:
    """A running JupyterLab: where it listens, its token, its folders and its log."""

    process: subprocess.Popen[bytes]
    port: int
    token: str
    root_dir: Path
    home: Path
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}?token={self.token}"

    def request(self, path: str, method: str = "GET") -> Any:
        """Call the server's REST API; the decoded JSON reply (None when empty)."""
        req = urllib.request.Request(f"{self.base_url}/{path.lstrip('/')}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with _LOCAL.open(req, timeout=10) as reply:
            body = reply.read()
        return json.loads(body) if body.strip() else None

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def lab_environment(tmp: Path, home: Path) -> dict[str, str]:
    """The server's environment: temporary progress home, Jupyter and IPython folders."""
    folders = {name: tmp / name.lower() for name in (
        "JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR",
        "JUPYTERLAB_WORKSPACES_DIR", "IPYTHONDIR")}
    for relative, values in LAB_SETTINGS.items():
        target = folders["JUPYTERLAB_SETTINGS_DIR"] / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    env = {**os.environ, **{k: str(v) for k, v in folders.items()}, "WORKBOOK_HOME": str(home),
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    for flag in ("NBGRADER_EXECUTION", "WORKBOOK_GRADING", "JUPYTER_TOKEN"):
        env.pop(flag, None)
    return env


def lab_command(port: int, token: str, root_dir: Path) -> list[str]:
    # Containers and CI often run tests as root, which Jupyter refuses without this flag.
    as_root = ["--allow-root"] if os.geteuid() == 0 else []
    return [
        sys.executable, "-m", "jupyterlab", *as_root, "--no-browser", "--ip=127.0.0.1",
        f"--port={port}", "--ServerApp.port_retries=0", f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]


def wait_until_answering(server: LabServer) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with code {server.process.returncode}:\n"
                               f"{server.log_tail()}")
        try:
            server.request("api/status")
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_S} s:\n"
                       f"{server.log_tail()}")


def shut_down(server: LabServer) -> None:
    """Ask the server to stop (it shuts its kernels down first), then insist if needed."""
    try:
        server.request("api/shutdown", method="POST")
    except (urllib.error.URLError, OSError):
        pass
    try:
        server.process.wait(timeout=30)
        return
    except subprocess.TimeoutExpired:
        server.process.terminate()  # SIGTERM: the server still stops its kernels
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=15)


@pytest.fixture
def workbook_home(tmp_path: Path) -> Path:
    """The progress folder the server's kernels use (they open the log at their first check)."""
    home = tmp_path / "workbook-home"
    home.mkdir()
    return home


@pytest.fixture
def lab_server(tmp_path: Path, workbook_home: Path) -> Iterator[LabServer]:
    """JupyterLab serving a copy of the learner notebooks; always shut down afterwards."""
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (the 'lab' extra)")
    root_dir = tmp_path / "notebooks"
    root_dir.mkdir()
    for notebook in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy(notebook, root_dir)
    port, token = free_port(), secrets.token_hex(16)
    log = tmp_path / "jupyterlab.log"
    with log.open("wb") as out:
        process = subprocess.Popen(lab_command(port, token, root_dir), stdout=out,
                                   stderr=subprocess.STDOUT, cwd=root_dir,
                                   env=lab_environment(tmp_path, workbook_home))
    server = LabServer(process, port, token, root_dir, workbook_home, log)
    try:
        wait_until_answering(server)
        yield server
    finally:
        shut_down(server)


@pytest.fixture
def chromium() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright; skips, saying why, if it cannot start."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium, or run make test as root)")
    with sync_api.sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except sync_api.Error as exc:
            pytest.skip(f"Chromium at {CHROMIUM} would not start: {str(exc)[:500]}")
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def artifacts(request: pytest.FixtureRequest) -> Path:
    """test-artifacts/e2e/<test name>/, emptied first, for screenshots."""
    folder = ARTIFACTS / re.sub(r"[^\w.-]+", "-", request.node.name).strip("-")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder
