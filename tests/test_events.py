"""The one event channel: its semantics, every source emitting during real work, the default status
documents (same names and fields as before), and listeners that act only when attached."""

from __future__ import annotations

import io
import logging
import os
import sys
import types

import pytest

import air_magics
from air_magics import events
from air_magics.events import (
    CacheEvent,
    CheckpointEvent,
    CopyEvent,
    Event,
    EventChannel,
    ExportEvent,
    LoaderEvent,
    channel,
    throttled,
)
from air_magics.listeners import LoggingListener, MlflowListener, StatusDocuments, TqdmListener, status_documents
from air_magics.status import read_status
from air_magics.transfer import CopyProgress
from air_magics.volumes import VolumeStore

# Each document is its event's to_dict() plus the write time: the keys come from the event classes
# (the sidebar's TypeScript types are checked against the same classes in tests/test_event_schema.py).
COPY_FIELDS = {*CopyEvent.keys(), "updated"}
CACHE_FIELDS = {*CacheEvent.keys(), "updated", "snapshot_time"}
LOADER_FIELDS = {*LoaderEvent.keys(), "updated", "history"}  # history: the training chart's rows
CHECKPOINT_FIELDS = {*CheckpointEvent.keys(), "updated"}


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.ev.data")
    for i in range(24):
        with s.open(f"/Volumes/main/ev/data/d{i % 3}/{i:02d}.bin", "wb") as f:
            f.write(b"e" * (100 + i))
    return s


class Recorder(list):
    def __call__(self, event: Event) -> None:
        self.append(event)


def _copy_event(job="j", state="running", done=0):
    return CopyEvent(job=job, state=state, progress=CopyProgress(10, done, 0, 0, 100, done * 10, 1.0))


# -- the channel ------------------------------------------------------------------------------------
def test_attach_detach_and_context_manager():
    ch, rec = EventChannel(), Recorder()
    handle = ch.attach(rec)
    ch.emit(_copy_event())
    handle.detach()
    ch.emit(_copy_event())
    assert len(rec) == 1 and not ch.listening()
    with ch.attach(rec):
        ch.emit(_copy_event(), also=[rec])  # per-call listeners first, then the attached ones
    assert len(rec) == 3 and ch.listeners == ()
    with pytest.raises(TypeError, match="callable"):
        ch.attach("not a listener")


def test_throttle_delivers_each_jobs_first_and_terminal_event():
    rec = Recorder()
    slow = throttled(rec, 3600)
    for i in range(5):
        slow(_copy_event("a", done=i))
        slow(_copy_event("b", done=i))
    slow(_copy_event("a", "done", 10))
    assert [(e.job, e.progress.copied, e.state) for e in rec] == [
        ("a", 0, "running"),
        ("b", 0, "running"),
        ("a", 10, "done"),
    ]
    slow(_copy_event("a", done=1))  # a new run of job "a" starts afresh after its terminal event
    assert rec[-1].job == "a" and rec[-1].state == "running"


def test_raising_listener_is_logged_and_does_not_break_a_copy(vol, tmp_path, caplog):
    def broken(event):
        raise RuntimeError("listener bug")

    seen = Recorder()
    with caplog.at_level(logging.ERROR, logger="air_magics"), channel.attach(broken):
        report = air_magics.copy(
            ["/Volumes/main/ev/data"],
            str(tmp_path / "out"),
            store=vol,
            listeners=[broken, seen, lambda e: 1 / 0],
        )
    assert report.ok and report.copied == 24
    assert seen[-1].state == "done" and seen[-1].progress.files_done == 24  # the others still heard everything
    failures = [r for r in caplog.records if "listener" in r.getMessage() and "failed" in r.getMessage()]
    assert failures and "listener bug" in caplog.text and "ZeroDivisionError" in caplog.text


def test_keyboard_interrupt_in_a_listener_reaches_the_caller_after_the_others():
    ch, rec = EventChannel(), Recorder()

    def ctrl_c(event):
        raise KeyboardInterrupt

    ch.attach(rec)
    with pytest.raises(KeyboardInterrupt):
        ch.emit(_copy_event(), also=[ctrl_c])
    assert len(rec) == 1


# -- every source emits during real work ------------------------------------------------------------
def test_copy_emits_events_and_writes_the_same_job_document(vol, tmp_path):
    rec, progress = Recorder(), []
    report = air_magics.copy(
        ["/Volumes/main/ev/data"],
        str(tmp_path / "c"),
        store=vol,
        job="evjob",
        listeners=[rec, lambda e: progress.append(e.progress)],
    )
    assert rec and all(isinstance(e, CopyEvent) and e.job == "evjob" for e in rec)
    assert rec[-1].state == "done" and rec[-1].terminal and not any(e.terminal for e in rec[:-1])
    assert rec[-1].progress.files_done == report.copied == 24 and progress[-1] == rec[-1].progress
    doc = read_status("job-copy-evjob")
    assert set(doc) == COPY_FIELDS
    assert doc["state"] == "done" and doc["files_done"] == 24 and doc["sources"] == ["/Volumes/main/ev/data"]
    assert doc["pid"] == os.getpid() and doc["finished"] >= doc["started"] > 0


def test_unnamed_copy_emits_but_writes_no_document(vol, tmp_path, air_home):
    """``job=""``: an internal copy (a checkpoint upload); a Python copy without ``job=`` is named
    after its source instead (issue 37.7, tests/test_first_day_fixes.py)."""
    from air_magics.transfer import copy_files, plan_copy

    rec = Recorder()
    plan = plan_copy(["/Volumes/main/ev/data"], str(tmp_path / "u"), store=vol)
    copy_files(plan.tasks, dest=plan.dest, job="", listeners=[rec])
    assert rec[-1].job is None and rec[-1].state == "done"
    assert not list((air_home / "run").glob("job-copy-*.json")) if (air_home / "run").exists() else True


def test_cache_fetch_emits_statistics(vol, tmp_path):
    from air_magics.cache import FileCache

    cache = FileCache(tmp_path / "cache", store=vol)
    rec = Recorder()
    with channel.attach(rec):
        cache.get("/Volumes/main/ev/data/d0/00.bin")
        cache.publish_status()
    stats = [e for e in rec if isinstance(e, CacheEvent)]
    assert stats and stats[-1].state == "done" and stats[-1].stats.misses == 1
    assert stats[-1].stats.bytes_fetched == 100
    doc = read_status("cache")
    assert set(doc) == CACHE_FIELDS and doc["misses"] == 1


def test_loader_epoch_emits_timing_and_a_done_event(vol):
    from air_magics.data import DataLoader, UCVolumeDataset

    rec = Recorder()
    dl = DataLoader(UCVolumeDataset("/Volumes/main/ev/data"), batch_size=4, num_workers=0, listeners=[rec])
    batches = sum(1 for _ in dl)
    loader = [e for e in rec if isinstance(e, LoaderEvent)]
    assert batches == 6
    assert loader[-1].state == "done" and loader[-1].timing.steps == 6 and loader[-1].files == 24
    # a short epoch (well under the report interval) reports once, when it is done
    assert all(e.state == "running" for e in loader[:-1]) and len(loader) <= 2
    doc = read_status(f"loader-{os.getpid()}")
    assert set(doc) == LOADER_FIELDS and doc["done"] is True and doc["steps"] == 6


def test_a_long_epoch_reports_a_few_times_a_second_not_per_batch(vol):
    import time

    from air_magics.data import DataLoader, UCVolumeDataset

    rec = Recorder()
    ds = UCVolumeDataset("/Volumes/main/ev/data")
    dl = DataLoader(ds, batch_size=1, num_workers=0, listeners=[rec])
    t0 = time.monotonic()
    for _ in dl:
        time.sleep(0.05)  # a model step: 24 steps take about 1.2 s
    took = time.monotonic() - t0
    loader = [e for e in rec if isinstance(e, LoaderEvent)]
    running = [e.timing.steps for e in loader[:-1]]
    assert loader[-1].state == "done" and loader[-1].timing.steps == 24
    assert all(e.state == "running" for e in loader[:-1]) and running == sorted(running)
    assert 1 <= len(running) <= took / 0.2 + 1  # at most one every 0.2 s, none before 0.2 s


def test_checkpoint_save_emits_its_states_and_the_same_document(vol):
    import torch

    from air_magics.checkpoints.commit import status_name
    from air_magics.data import CheckpointManager

    rec, on_channel = Recorder(), Recorder()
    with channel.attach(on_channel):
        mgr = CheckpointManager("/Volumes/main/ev/data/ckpt", keep=2, show=False, listeners=[rec])
        mgr.save(1, {"w": torch.ones(3)})
    assert [e.state for e in rec] == ["announced", "staging", "uploading", "uploaded", "committed"]
    assert rec[0].show is False and rec[0].saves is None
    last = rec[-1]
    assert last.terminal and last.step == 1 and last.latest == 1 and last.keep == 2 and last.detail["bytes"] > 0
    writer = [e for e in on_channel if isinstance(e, CheckpointEvent) and e.saves is None and e.state != "announced"]
    assert [e.state for e in writer] == ["uploading", "uploaded"]  # the writer reports its own upload too
    doc = read_status(status_name("/Volumes/main/ev/data/ckpt"))
    assert set(doc) == CHECKPOINT_FIELDS and doc["latest"] == 1 and doc["saves"][-1]["state"] == "committed"


def test_export_progress_becomes_events_and_documents():
    """The export's progress path without a Spark server: Spark's handler arguments in, events out."""
    from air_magics.tables.export import _Progress

    rec = Recorder()
    prog = _Progress("abc123", "/Volumes/main/ev/data/export", [rec])
    prog.update()
    stage = types.SimpleNamespace(num_tasks=4, num_completed_tasks=2, num_bytes_read=2048)
    prog([stage], 2, "op", False)
    prog.update("done", rows=10, files=1, bytes=500)
    assert [e.state for e in rec] == ["running", "running", "done"] and all(isinstance(e, ExportEvent) for e in rec)
    assert rec[1].progress.tasks_done == 2 and rec[-1].progress.rows == 10
    doc = read_status("job-export-abc123")
    assert set(doc) == {*ExportEvent.keys(), "updated"}
    assert doc["state"] == "done" and doc["tasks"] == 4


# -- the default listener and the optional ones -----------------------------------------------------
def test_status_documents_are_attached_by_default_and_can_be_detached(vol, tmp_path):
    assert status_documents in channel.listeners and isinstance(status_documents, StatusDocuments)
    assert channel.detach(status_documents)
    try:
        air_magics.copy(["/Volumes/main/ev/data"], str(tmp_path / "d"), store=vol, job="quiet")
        assert read_status("job-copy-quiet") is None
    finally:
        channel.attach(status_documents)
    air_magics.copy(["/Volumes/main/ev/data"], str(tmp_path / "d"), store=vol, job="heard")
    assert read_status("job-copy-heard")["skipped"] == 24


def test_logging_and_tqdm_listeners(vol, tmp_path, caplog):
    out = io.StringIO()
    with caplog.at_level(logging.INFO, logger="air_magics.transfer"):
        air_magics.copy(
            ["/Volumes/main/ev/data"],
            str(tmp_path / "t"),
            store=vol,
            job="shown",
            listeners=[LoggingListener(), TqdmListener(file=out)],
        )
    assert "copy shown done" in caplog.text and "'copied': 24" in caplog.text
    assert "24/24" in out.getvalue()


@pytest.fixture
def fake_mlflow(monkeypatch):
    """mlflow is an optional extra, not installed for the tests: a minimal stand-in with a run."""
    logged: list[tuple[dict, int]] = []
    mod = types.ModuleType("mlflow")
    mod.active_run = lambda: object()
    mod.log_metrics = lambda metrics, step=None: logged.append((metrics, step))
    monkeypatch.setitem(sys.modules, "mlflow", mod)
    return logged


def test_mlflow_is_untouched_unless_its_listener_is_attached(vol, fake_mlflow):
    from air_magics.data import DataLoader, UCVolumeDataset

    dl = DataLoader(UCVolumeDataset("/Volumes/main/ev/data"), batch_size=4, num_workers=0)
    for _ in dl:
        pass
    assert fake_mlflow == []  # an active run and an imported mlflow are not an invitation
    with channel.attach(MlflowListener()):
        for _ in dl:
            pass
    keys = set(fake_mlflow[-1][0]) if fake_mlflow else set()
    assert {"air.data_wait_s", "air.compute_s", "air.wait_share", "dataloader/fetch_seconds/rank_0"} <= keys
    stages = {"listing", "storage_read", "cache_write", "handover", "transform", "collate", "wait", "compute"}
    assert {f"air.stage/{s}_s/rank_0" for s in stages} <= keys  # the stage series, per rank
    assert fake_mlflow[-1][1] == 12  # the epoch's done event, always logged: step = batches delivered


def test_mlflow_listener_says_what_to_install(monkeypatch):
    from air_magics.errors import AirError

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow -> ImportError
    with pytest.raises(AirError, match="pip install mlflow"):
        MlflowListener()


# -- the front end: a manager announces itself, the extension shows it ------------------------------
def test_loaded_extension_shows_a_managers_view_as_configured(vol, monkeypatch):
    from IPython.testing.globalipapp import get_ipython, start_ipython

    import air_magics.widgets.checkpoint_view  # noqa: F401  (the module whose function is replaced)
    from air_magics.data import CheckpointManager
    from air_magics.widgets import listeners as front

    shown: list[str] = []
    monkeypatch.setattr(front, "has_widget_frontend", lambda: True)  # as in a kernel with a browser
    monkeypatch.setattr(
        sys.modules["air_magics.widgets.checkpoint_view"],
        "checkpoint_view",
        lambda directory, display_now=False: shown.append(directory),
    )
    ip = start_ipython() or get_ipython()  # None when another test module started it already
    ip.run_line_magic("load_ext", "air_magics")
    air_magics.load_ipython_extension(ip)  # registered again (as %reload_ext does): still one listener
    assert sum(isinstance(x, front.CheckpointViews) for x in channel.listeners) == 1
    try:
        ip.run_line_magic("config", "AirMagics.widgets = True")
        managers = [
            CheckpointManager("/Volumes/main/ev/data/a"),
            CheckpointManager("/Volumes/main/ev/data/b", show=False),
        ]
        ip.run_line_magic("config", "AirMagics.widgets = False")
        managers += [
            CheckpointManager("/Volumes/main/ev/data/c"),
            CheckpointManager("/Volumes/main/ev/data/d", show=True),
        ]
        assert shown == []  # made, not saving yet: the cell that only makes a manager shows nothing
        ip.run_line_magic("config", "AirMagics.widgets = True")
        for step, mgr in enumerate(managers, start=1):
            if mgr.directory.name == "c":
                ip.run_line_magic("config", "AirMagics.widgets = False")
            mgr.save(step, {"x": step})
            mgr.save(step + 10, {"x": step})  # a later save does not show it again
            ip.run_line_magic("config", "AirMagics.widgets = True")
    finally:
        ip.run_line_magic("config", "AirMagics.widgets = True")
    assert shown == ["/Volumes/main/ev/data/a", "/Volumes/main/ev/data/d"]


def test_no_widgets_outside_a_kernel(vol, monkeypatch):
    import air_magics.widgets.checkpoint_view  # noqa: F401
    from air_magics.data import CheckpointManager
    from air_magics.widgets.listeners import CheckpointViews

    shown: list[str] = []
    monkeypatch.setattr(
        sys.modules["air_magics.widgets.checkpoint_view"],
        "checkpoint_view",
        lambda directory, display_now=False: shown.append(directory),
    )
    with channel.attach(CheckpointViews()):
        CheckpointManager("/Volumes/main/ev/data/e")
    assert shown == []


def test_events_are_frozen_values():
    e = _copy_event()
    with pytest.raises(AttributeError):
        e.state = "done"  # type: ignore[misc]
    assert e.source == "copy" and set(events.SOURCES) == {
        "copy",
        "cache",
        "loader",
        "checkpoint",
        "export",
        "pack",
        "server",
    }


def test_an_older_cache_snapshot_never_replaces_a_newer_one(vol, tmp_path):
    """Processes write the one cache document; one that took its snapshot earlier but writes later loses."""
    from air_magics.cache import FileCache
    from air_magics.listeners import status_documents

    cache = FileCache(tmp_path / "cache", store=vol)
    cache.get("/Volumes/main/ev/data/d0/00.bin")
    old = CacheEvent(state="done", stats=cache.info())
    cache.get("/Volumes/main/ev/data/d0/03.bin")
    cache.publish_status()  # the newer snapshot: 2 misses
    status_documents(old)  # a slower process delivers its older snapshot afterwards
    assert read_status("cache")["misses"] == 2
