"""Sample data for the tour: ``python -m air_magics.demo`` seeds ``/Volumes/main/demo/images``.

The volume imitates an image-classification data set: many small files in class folders, the
shape that makes per-file latency dominate on remote volumes. Seeding is idempotent.

``python -m air_magics.demo --lab`` (what ``make demo`` runs) then starts JupyterLab on the tour
notebook itself and prints that notebook's URL with its token, so the first page a newcomer sees
is the tour, not the Launcher; a browser opens where there is one (``AIR_DEMO_BROWSER=0``: never,
``=1``: always).
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .volumes import VolumePath, VolumeStore

__all__ = ["seed_sample_volume", "SAMPLE_VOLUME", "TOUR_NOTEBOOK", "tour_url", "run_lab"]

SAMPLE_VOLUME = "main.demo.images"
TOUR_NOTEBOOK = "notebooks/01_volumes_and_copy.ipynb"


def seed_sample_volume(
    volume: str = SAMPLE_VOLUME, *, files: int = 600, seed: int = 0, store: VolumeStore | None = None
) -> VolumePath:
    """Create *volume* (if needed) with ``train/`` and ``val/`` class folders of small fake JPEGs."""
    store = store or VolumeStore.shared()
    root = VolumePath.parse_volume(volume)
    store.create(root, exist_ok=True)
    classes = ("cat", "dog", "bird")
    for i in range(files):
        rng = random.Random(f"{seed}:{i}")  # per file, so a re-seed skips or rewrites each file alike
        split = "val" if i % 5 == 0 else "train"
        path = root / split / classes[i % 3] / f"img_{i:05d}.jpg"
        size = rng.randrange(2_000, 24_000)
        if store.exists(path) and store.stat(path).size == size:
            continue
        with store.open(path, "wb") as f:
            f.write(b"\xff\xd8\xff\xe0" + rng.randbytes(size - 4))
    with store.open(root / "README.txt", "wb") as f:
        f.write(b"Sample volume seeded by air_magics.demo: train/ and val/ folders of small images.\n")
    return root


def tour_url(port: int, token: str, notebook: str = TOUR_NOTEBOOK, host: str = "127.0.0.1") -> str:
    """The URL that opens *notebook* (relative to the server's root) in JupyterLab, token included."""
    return f"http://{host}:{port}/lab/tree/{notebook}?token={token}"


def _browser_wanted() -> bool:
    """Open a browser only where one can show: a desktop, or ``AIR_DEMO_BROWSER=1``.

    A headless Linux box has no ``DISPLAY``; there ``webbrowser`` would pick a console browser
    (lynx, w3m) that takes over the terminal the server logs to.
    """
    forced = os.environ.get("AIR_DEMO_BROWSER", "")
    if forced in ("0", "1"):
        return forced == "1"
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    import webbrowser

    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def _wait_ready(proc: subprocess.Popen, port: int, token: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}/api/status?token={token}"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"JupyterLab exited with status {proc.returncode} before it was ready (its log is above)")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"JupyterLab did not answer on port {port} within {timeout:.0f} s (its log is above)")


def _check_port_free(port: int) -> None:
    """Refuse a port something already listens on, naming the fix (JupyterLab's own message says
    only "port not available"; 8888 is the port most often taken by another Jupyter)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds (TIME_WAIT is no owner)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise SystemExit(
                f"port {port} is not available ({exc.strerror or exc}; another Jupyter server?): "
                f"pick another one, e.g. `make demo PORT={port + 2}` or `python -m air_magics.demo --lab "
                f"--port {port + 2}`"
            ) from None


def run_lab(port: int = 8888, *, root: str | Path = ".", notebook: str = TOUR_NOTEBOOK, timeout: float = 180.0) -> int:
    """Serve JupyterLab from *root*, print *notebook*'s URL once it answers, open a browser where one
    can show, and wait: Ctrl-C stops the server (its exit status is returned)."""
    if not (Path(root) / notebook).is_file():
        raise SystemExit(f"{notebook!r} is not under {str(root)!r}: run this from the repository's root")
    _check_port_free(port)
    token = secrets.token_hex(24)
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={Path(root).resolve()}"]
    cmd += [f"--port={port}", "--port-retries=0", "--ip=127.0.0.1", "--no-browser"]
    cmd += [f"--IdentityProvider.token={token}", f"--LabApp.default_url=/lab/tree/{notebook}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd)
    try:
        _wait_ready(proc, port, token, timeout)
        url = tour_url(port, token, notebook)
        print(f"\n    The tour is at {url}\n", flush=True)
        if _browser_wanted():
            import webbrowser

            webbrowser.open(url)
        return proc.wait()
    except KeyboardInterrupt:  # Ctrl-C reached the server too; stop it now rather than at its y/n prompt
        print("stopping JupyterLab", flush=True)
        return 0
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--volume", default=SAMPLE_VOLUME)
    ap.add_argument("--files", type=int, default=600)
    ap.add_argument("--lab", action="store_true", help="then serve JupyterLab on the tour notebook")
    ap.add_argument("--port", type=int, default=8888, help="JupyterLab's port (with --lab)")
    args = ap.parse_args(argv)
    root = seed_sample_volume(args.volume, files=args.files)
    print(f"sample volume ready: {root} ({args.files} files) in {VolumeStore.shared().root}", flush=True)
    if args.lab:
        raise SystemExit(run_lab(args.port))


if __name__ == "__main__":
    main()
