"""A real Jupyter server in a subprocess for the sidebar tests (REST and browser).

It runs with the given AIR_HOME (and volumes mount), a random token, and config/data/runtime/
settings/workspace folders of its own, so it never reads or writes the user's Jupyter state.
The air_magics server extension is *not* enabled here: the installed config file must do it.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class JupyterServer:
    url: str
    token: str
    home: Path
    root_dir: Path
    log: Path
    proc: subprocess.Popen

    def api(self, endpoint: str) -> str:
        return f"{self.url}/air/api/{endpoint}"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def get(self, endpoint: str, **params) -> requests.Response:
        return requests.get(self.api(endpoint), params=params, headers=self.auth, timeout=60)

    def alive(self) -> bool:
        try:
            return requests.get(f"{self.url}/api/status", headers=self.auth, timeout=10).status_code == 200
        except requests.RequestException:
            return False

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # lets Jupyter shut its kernels down
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def start_server(
    base: Path,
    *,
    home: Path,
    mount: Path,
    app: str = "server",
    timeout: float = 90.0,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> JupyterServer:
    """Start ``jupyter server`` (``app="server"``) or ``jupyter lab`` (``app="lab"``) under *base*."""
    base.mkdir(parents=True, exist_ok=True)
    root = base / "notebooks"
    root.mkdir(exist_ok=True)
    cfg = base / "jupyter-config"
    (cfg / "labconfig").mkdir(parents=True, exist_ok=True)
    # no "news" pop-up covering the page
    (cfg / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    token = secrets.token_hex(16)
    port = free_port()
    child_env = dict(os.environ)
    child_env.pop("AIR_VOLUMES_ROOT", None)
    child_env.update(
        {
            "AIR_HOME": str(home),
            "AIR_VOLUMES_MOUNT": str(mount),
            "JUPYTER_CONFIG_DIR": str(cfg),
            "JUPYTER_DATA_DIR": str(base / "jupyter-data"),
            "JUPYTER_RUNTIME_DIR": str(base / "jupyter-runtime"),
            "IPYTHONDIR": str(base / "ipython"),
            "JUPYTERLAB_SETTINGS_DIR": str(base / "lab-settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(base / "lab-workspaces"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    child_env.update(env or {})
    module = "jupyterlab" if app == "lab" else "jupyter_server"
    cmd = [
        sys.executable,
        "-m",
        module,
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--allow-root",
        *args,
    ]
    log = base / f"jupyter-{app}.log"
    out = open(log, "wb")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=child_env, cwd=root, start_new_session=True)
    out.close()
    srv = JupyterServer(f"http://127.0.0.1:{port}", token, home, root, log, proc)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter {app} exited with {proc.returncode}:\n{srv.log_tail()}")
        if srv.alive():
            return srv
        time.sleep(0.25)
    srv.stop()
    raise RuntimeError(f"jupyter {app} did not answer within {timeout:.0f} s:\n{srv.log_tail()}")
