"""``make demo`` opens the tour (issue 37, item 3): the printed URL is the tour notebook's own, token
included, and it answers; Ctrl-C stops the server and leaves nothing running."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import requests

from air_magics import demo
from air_magics.tables.server import free_port

REPO = Path(__file__).resolve().parents[1]


def test_tour_url_names_the_notebook():
    assert demo.tour_url(8888, "abc") == "http://127.0.0.1:8888/lab/tree/notebooks/01_volumes_and_copy.ipynb?token=abc"
    assert (REPO / demo.TOUR_NOTEBOOK).is_file()


@pytest.mark.parametrize(
    "env,expected",
    [
        ({"AIR_DEMO_BROWSER": "0", "DISPLAY": ":0"}, False),
        ({"AIR_DEMO_BROWSER": "1"}, True),
    ],
)
def test_browser_choice_follows_the_variable(monkeypatch, env, expected):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert demo._browser_wanted() is expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the DISPLAY rule is Linux's")
def test_no_browser_on_a_headless_linux(monkeypatch):
    for var in ("AIR_DEMO_BROWSER", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(var, raising=False)
    assert demo._browser_wanted() is False


def test_run_lab_refuses_a_missing_notebook(tmp_path):
    with pytest.raises(SystemExit, match="not under"):
        demo.run_lab(free_port(), root=tmp_path)


def test_a_taken_port_is_refused_with_the_fix(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(SystemExit, match=rf"port {port} is not available .*make demo PORT={port + 2}"):
            demo.run_lab(port, root=REPO)


@pytest.mark.timeout(240)
def test_demo_serves_the_tour_and_ctrl_c_stops_it(air_home):
    port = free_port()
    env = dict(os.environ, AIR_DEMO_BROWSER="0", PYTHONUNBUFFERED="1", JUPYTER_PLATFORM_DIRS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "air_magics.demo", "--lab", "--port", str(port), "--files", "30"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = None
        deadline = time.monotonic() + 200
        lines = []
        while time.monotonic() < deadline and url is None:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "The tour is at " in line:
                url = line.split("The tour is at ", 1)[1].strip()
        assert url, f"no tour URL printed: {lines}"
        assert url.startswith(f"http://127.0.0.1:{port}/lab/tree/notebooks/01_volumes_and_copy.ipynb?token=")
        token = url.rsplit("token=", 1)[1]
        page = requests.get(url, timeout=30)
        assert page.status_code == 200 and "JupyterLab" in page.text
        nb = requests.get(
            f"http://127.0.0.1:{port}/api/contents/notebooks/01_volumes_and_copy.ipynb",
            params={"content": 0},
            headers={"Authorization": f"token {token}"},
            timeout=30,
        )
        assert nb.status_code == 200 and nb.json()["type"] == "notebook"
        assert (air_home / "volumes" / "main" / "demo" / "images").is_dir()  # seeded first
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "JupyterLab runs as the demo's child"
        os.kill(proc.pid, signal.SIGINT)  # Ctrl-C
        assert proc.wait(30) == 0
        gone, alive = psutil.wait_procs(children, timeout=15)
        assert not alive, f"left running after Ctrl-C: {alive}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
