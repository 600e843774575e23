"""Issue 37, item 7: the rough edges a newcomer hit on the first day, each with its test."""

from __future__ import annotations

import io
import os
import re

import pytest
from _seed import seeded_volume
from IPython.core.error import UsageError
from traitlets import TraitError

import air_magics
from air_magics.errors import TablesError
from air_magics.events import CopyEvent
from air_magics.listeners import TqdmListener
from air_magics.tables.export import export_table
from air_magics.tables.ops import read_table
from air_magics.tables.row_limit import check_limit
from air_magics.transfer import CopyProgress
from air_magics.volumes import VolumeStore


def _rate(text: str) -> float:
    """The files/s tqdm drew last (``60.00file/s``)."""
    return float(re.findall(r"([\d.]+)file/s", text)[-1])


def test_the_text_bar_shows_the_copys_own_rate():
    """A 120-file copy printed 2,467,237 files/s: tqdm divided by the bar's age (made at the copy's
    first event, which for a fast copy is its last), not by the copy's."""
    out = io.StringIO()
    done = CopyEvent(job="quick", state="done", progress=CopyProgress(120, 120, 0, 0, 120_000, 120_000, 2.0))
    TqdmListener(file=out)(done)
    assert 50 <= _rate(out.getvalue()) <= 60.01  # 120 files in 2 s (drawing takes a moment more)
    assert "00:02" in out.getvalue()  # the copy's elapsed time, not the bar's


def test_a_real_copys_bar_agrees_with_its_report(tmp_path):
    store = seeded_volume("main.tq.rate", {f"/Volumes/main/tq/rate/f{i:03d}.bin": b"x" * 64 for i in range(120)})
    out = io.StringIO()
    report = air_magics.copy(
        ["/Volumes/main/tq/rate"], str(tmp_path / "d"), store=store, listeners=[TqdmListener(file=out)]
    )
    assert report.copied == 120
    assert _rate(out.getvalue()) <= report.files_per_second * 1.5 + 1


@pytest.mark.parametrize("n", ["3000000000", "-1"])
def test_a_limit_out_of_range_says_the_range_before_any_server_starts(ip, n):
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("air_table", f"main.demo.features --as pandas --limit {n}")
    assert "out of range: use 0 to 2,147,483,647" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(TablesError, match="2,147,483,647"):
        read_table("main.demo.features", limit=2**31)
    with pytest.raises(TablesError, match="2,147,483,647"):
        export_table("main.demo.features", "/Volumes/main/demo/out/x", limit=-5)
    assert check_limit(2**31 - 1) == 2**31 - 1 and check_limit(None) is None


def test_python_api_copies_show_in_the_sidebars_jobs_named_after_their_source(tmp_path):
    from air_magics.server.queries import jobs
    from air_magics.status import read_status
    from air_magics.transfer import copy_files, plan_copy

    store = seeded_volume("main.tq.jobs", {f"/Volumes/main/tq/jobs/train/f{i}.bin": b"j" * 10 for i in range(5)})
    report = air_magics.copy(["/Volumes/main/tq/jobs/train"], str(tmp_path / "a"), store=store)
    assert report.copied == 5
    named = {j["job"]: j for j in jobs()["jobs"] if j["kind"] == "copy"}
    (name,) = [n for n in named if n.startswith("train-")]
    assert named[name]["state"] == "done" and named[name]["progress"] == 1.0
    assert named[name]["sources"] == ["/Volumes/main/tq/jobs/train"]
    # the same copy again replaces its entry; an explicit job= is used as given
    air_magics.copy(["/Volumes/main/tq/jobs/train"], str(tmp_path / "a"), store=store)
    air_magics.copy(["/Volumes/main/tq/jobs/train"], str(tmp_path / "b"), store=store, job="mine")
    names = [j["job"] for j in jobs()["jobs"] if j["kind"] == "copy"]
    assert names.count(name) == 1 and "mine" in names
    # bare tasks: named after the folder of the files; job="" (an internal copy): no document
    plan = plan_copy(["/Volumes/main/tq/jobs/train"], str(tmp_path / "c"), store=store)
    copy_files(plan.tasks, dest=plan.dest)
    assert sum(n.startswith("train-") for n in (j["job"] for j in jobs()["jobs"])) == 2
    before = len(jobs()["jobs"])
    copy_files(plan_copy(["/Volumes/main/tq/jobs/train"], str(tmp_path / "d"), store=store).tasks, job="")
    assert len(jobs()["jobs"]) == before and read_status(f"job-copy-{name}") is not None


def test_a_checkpoint_save_is_no_copy_job():
    import torch

    from air_magics.data import CheckpointManager
    from air_magics.server.queries import jobs

    VolumeStore().create("main.raw.ck")
    CheckpointManager("/Volumes/main/raw/ck/run", keep=2, show=False).save(1, {"w": torch.ones(2)})
    assert [j for j in jobs()["jobs"] if j["kind"] == "copy"] == []


def test_the_sidebar_drops_checkpoints_the_manager_pruned():
    import torch

    from air_magics.data import CheckpointManager
    from air_magics.server.queries import checkpoints
    from air_magics.widgets.checkpoint_view import checkpoints_text

    VolumeStore().create("main.raw.ckp")
    m = CheckpointManager("/Volumes/main/raw/ckp/run", keep=2, show=False)
    for step in (4, 8, 12):
        m.save(step, {"w": torch.ones(2)})
    m.wait()  # the pruning runs after the commit, off the save's clock
    (folder,) = checkpoints()["checkpoints"]
    assert folder["steps"] == [8, 12] and folder["latest"] == 12
    assert [s["step"] for s in folder["saves"]] == [8, 12]  # step 4 was pruned: not listed
    from air_magics.checkpoints.commit import checkpoint_status

    assert "pruned" in checkpoints_text(checkpoint_status("/Volumes/main/raw/ckp/run"))  # the notebook view says so


def test_a_bad_config_value_is_one_usage_error_line_not_a_log_record(tmp_path):
    """What a kernel user sees: IPython's %config hands an error to logging.error, which printed
    ``ERROR:root:...``; run in a fresh process, where the root logger has no handler (as in a kernel)."""
    import subprocess
    import sys

    code = (
        "from IPython.testing.globalipapp import start_ipython\n"
        "ip = start_ipython()\n"
        "ip.run_line_magic('load_ext', 'air_magics')\n"
        "ip.run_line_magic('config', \"AirMagics.cache_limit = 'lots'\")\n"
        "ip.run_line_magic('config', \"AirMagics.cache_limit = '2GiB'\")\n"
        "ip.run_line_magic('config', \"AirMagics.cache_limit = 'more'\")\n"
        "print(ip.magics_manager.registry['AirMagics'].cache_limit)\n"
    )
    env = {**os.environ, "AIR_HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "ERROR:root" not in run.stderr and "Traceback" not in run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert lines == [
        "UsageError: AirMagics.cache_limit = 'lots' is not a size: write e.g. 500MB, 10GiB or a number of bytes",
        "UsageError: AirMagics.cache_limit = 'more' is not a size: write e.g. 500MB, 10GiB or a number of bytes",
    ]
    assert run.stdout.strip() == "2GiB"  # a refused value leaves the last good one


def test_outside_a_shell_a_bad_config_value_still_raises():
    from traitlets.config import Config

    from air_magics.magics import AirMagics

    with pytest.raises(TraitError, match="is not a size"):
        AirMagics(shell=None).update_config(Config({"AirMagics": {"cache_limit": "lots"}}))


def test_the_shipped_notebooks_store_no_temp_paths():
    """A reader of a shipped notebook saw outputs naming /tmp/tmp.umPMYXEVbh/...: a machine's
    temp folders are noise (and name someone's machine). Cells with such outputs keep none."""
    import json
    from pathlib import Path

    notebooks = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        nb = json.loads(path.read_text())
        stored = [(i, c.get("outputs", [])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
        stored.append(("widget state", nb.get("metadata", {}).get("widgets", {})))
        for where, outputs in stored:
            found = re.search(r"(/tmp/|/var/folders/|pytest-of-)\S{0,40}", json.dumps(outputs))
            assert not found, f"{path.name} {where}: a stored output names a temp path: {found.group(0)}"


def test_ls_hides_the_pack_lock_and_counts_read_one_shard(ip):
    from air_magics.shards import pack
    from air_magics.shards.dest import LOCK_NAME

    store = seeded_volume("main.tq.pk", {f"/Volumes/main/tq/pk/src/f{i}.bin": b"p" * 100 for i in range(3)})
    report = pack("/Volumes/main/tq/pk/src", "/Volumes/main/tq/pk/packed", store=store)
    assert "in 1 shard " in str(report) and "wrote 1 shard (3 files" in str(report)
    assert store.exists(f"/Volumes/main/tq/pk/packed/{LOCK_NAME}")  # the lock is there...
    for line in ("ls /Volumes/main/tq/pk/packed", "ls -r /Volumes/main/tq/pk"):
        text = repr(ip.run_line_magic("air_volume", line))
        assert LOCK_NAME not in text, text  # ...but not listed
    text = repr(ip.run_line_magic("air_volume", "ls /Volumes/main/tq/pk/packed"))
    assert "3 members" in text and "in 1 shard," in text and "1 shards" not in text


def test_a_one_file_copy_says_file():
    from air_magics.transfer import CopyReport

    assert (
        "copied 1 of 1 file (" in CopyReport(files_total=1, copied=1, bytes_copied=10, seconds=0.1, dest="/x").summary()
    )
