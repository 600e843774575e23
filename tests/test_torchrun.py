"""%%air_torchrun: a cell on several ranks through torch's real launcher (torch.distributed.run, gloo
on CPU), its output live, a failing rank's traceback, and nothing left running after a timeout or
Ctrl-C."""

import os
import signal
import threading
import time

import pytest
from IPython.core.error import UsageError

from air_magics.torch_launcher import RankRun


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not running either
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_ranks_run_the_cell_with_torchruns_environment(ip, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AIR_VOLUMES_ROOT", str(tmp_path / "volumes"))
    monkeypatch.delenv("AIR_VOLUMES_MOUNT", raising=False)
    ip.run_line_magic("air_volume", "create main.tr.dflt")
    ip.run_line_magic("air_volume", "use main.tr.dflt")  # the kernel's default volume
    ip.run_line_magic("config", "AirMagics.cache_limit = '1GiB'")  # a kernel setting, not in the environment
    cell = (
        "import os\n"
        "import torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "keys = ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'MASTER_ADDR', 'MASTER_PORT', 'AIR_HOME', 'AIR_CACHE_LIMIT')\n"
        "env = {k: os.environ[k] for k in keys}\n"
        "from air_magics.volumes import VolumePath\n"
        "env['relative'] = str(VolumePath.parse('train/x.bin'))\n"
        "print('rank', dist.get_rank(), 'of', dist.get_world_size(), flush=True)\n"
        "got = [None] * dist.get_world_size()\n"
        "dist.all_gather_object(got, env)\n"
        "dist.destroy_process_group()\n"
    )
    try:
        run = ip.run_cell_magic("air_torchrun", "--nproc-per-node 2 --return got -o res", cell)
    finally:
        ip.run_line_magic("config", "AirMagics.cache_limit = None")
        ip.run_line_magic("config", "AirMagics.default_volume = ''")
    assert isinstance(run, RankRun) and run.ok and ip.user_ns["res"] is run and run.exit_codes == {0: 0, 1: 0}
    assert [e["RANK"] for e in run.value] == ["0", "1"] and {e["WORLD_SIZE"] for e in run.value} == {"2"}
    assert [e["LOCAL_RANK"] for e in run.value] == ["0", "1"] and len({e["MASTER_PORT"] for e in run.value}) == 1
    assert {e["AIR_HOME"] for e in run.value} == {str(tmp_path / "home")}  # the kernel's settings reach the ranks
    assert {e["AIR_CACHE_LIMIT"] for e in run.value} == {"1GiB"}
    assert {e["relative"] for e in run.value} == {"/Volumes/main/tr/dflt/train/x.bin"}  # %air_volume use, inherited
    out = capsys.readouterr().out
    assert "rank 0 of 2" in out and "rank 1 of 2" not in out  # rank 0's output only, by default
    assert "OMP_NUM_THREADS" not in out  # the launcher's own chatter is not shown


def test_a_failing_rank_fails_the_cell_with_its_traceback(ip, capsys):
    cell = "import os\nprint('hi from', os.environ['RANK'], flush=True)\nif os.environ['RANK'] == '1':\n    raise ValueError('boom on one')\n"
    with pytest.raises(UsageError) as err:
        ip.run_cell_magic("air_torchrun", "--nproc-per-node 2 --all-ranks", cell)
    msg = str(err.value)
    assert msg.splitlines()[0] == "rank 1 failed with exit code 1; the other ranks were stopped:"
    assert "Traceback (most recent call last)" in msg and msg.rstrip().endswith("ValueError: boom on one")
    out = capsys.readouterr().out
    assert "[rank 0] hi from 0" in out and "[rank 1] hi from 1" in out


@pytest.mark.parametrize("how", ["timeout", "interrupt"])
def test_a_timeout_or_ctrl_c_stops_every_rank(ip, tmp_path, how):
    pids = tmp_path / "pids"
    pids.mkdir()
    cell = (
        "import os, time\n"
        f"open(os.path.join({str(pids)!r}, os.environ['RANK']), 'w').write(str(os.getpid()))\n"
        "time.sleep(120)\n"
    )
    line = "--nproc-per-node 2" + (" --timeout 8" if how == "timeout" else "")
    if how == "interrupt":

        def interrupt() -> None:  # Ctrl-C once both ranks run, as the kernel's interrupt does
            deadline = time.monotonic() + 60
            while len(os.listdir(pids)) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
    t = time.monotonic()
    expected = "ran past --timeout 8 s and were stopped" if how == "timeout" else "interrupted"
    with pytest.raises(UsageError, match=expected):
        ip.run_cell_magic("air_torchrun", line, cell)
    assert time.monotonic() - t < 40
    ranks = [int((pids / r).read_text()) for r in sorted(os.listdir(pids))]
    assert len(ranks) == 2
    deadline = time.monotonic() + 10
    while any(alive(p) for p in ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in ranks)  # no orphan rank


@pytest.mark.parametrize(
    "line,cell,needle",
    [
        ("", "print(1)", "needs --nproc-per-node N"),
        ("--nproc-per-node 0", "print(1)", "needs --nproc-per-node N (1 or more ranks on this node), got 0"),
        ("--nproc-per-node 2", "  \n", "put the training code below the magic line"),
        ("--nproc-per-node 2 --timeout 0", "print(1)", "--timeout 0: give the seconds"),
        ("--nproc-per-node 2 --return 1x", "print(1)", "--return '1x': give the name of a variable"),
        ("--nproc-per-node 2 --nnodes 2", "print(1)", "--nnodes 2: give --rdzv-endpoint HOST:PORT"),
        ("--nproc-per-node 2 --frobnicate", "print(1)", "unrecognized arguments: --frobnicate"),
    ],
)
def test_bad_lines_are_one_line_errors_before_anything_runs(ip, line, cell, needle):
    with pytest.raises(UsageError, match=None) as err:
        ip.run_cell_magic("air_torchrun", line, cell)
    assert needle in str(err.value)


def test_a_return_name_the_cell_never_assigns_is_an_error(ip):
    with pytest.raises(UsageError, match="rank 0 finished without a variable 'loss' to return; assign it"):
        ip.run_cell_magic("air_torchrun", "--nproc-per-node 1 --return loss", "x = 1\n")


def test_launch_calls_a_notebook_function_on_every_rank(ip):
    # defined in the shell, as in a notebook: __main__, so it must travel by value
    ip.run_cell(
        "import air_magics\n"
        "scale = 10\n"
        "def work(x, *, bias=0):\n"
        "    import torch, torch.distributed as dist\n"
        "    dist.init_process_group('gloo')\n"
        "    t = torch.tensor([float(dist.get_rank() + x)])\n"
        "    dist.all_reduce(t)\n"
        "    dist.destroy_process_group()\n"
        "    return {'sum': t.item() * scale + bias, 'rank': dist.get_rank() if dist.is_initialized() else None}\n"
    ).raise_error()
    ip.run_cell("got = air_magics.launch(work, 3, bias=1, nproc_per_node=2, timeout=120)").raise_error()
    assert ip.user_ns["got"] == {"sum": (3 + 4) * 10 + 1, "rank": None}


def test_launch_reports_a_failing_rank(ip):
    from air_magics.torch_launcher import RankFailedError

    ip.run_cell("def bad():\n    import os\n    if os.environ['RANK'] == '1':\n        raise KeyError('nope')\n")
    with pytest.raises(RankFailedError, match=r"(?s)rank 1 failed with exit code 1.*KeyError: 'nope'"):
        ip.run_cell("import air_magics; air_magics.launch(bad, nproc_per_node=2)").raise_error()


TWO_NODES_CELL = """
import json, os, torch, torch.distributed as dist
from air_magics.data import CheckpointManager, DataLoader, UCVolumeDataset
dist.init_process_group("gloo")
rank = dist.get_rank()
loader = DataLoader(UCVolumeDataset("/Volumes/main/tr/data", shuffle=True, seed=3), batch_size=None, num_workers=1)
epochs = [[os.path.basename(p) for p in loader] for _ in range(2)]
with open(os.path.join(os.environ["OUT"], f"rank{rank}.json"), "w") as f:
    json.dump({"epochs": epochs, "home": os.environ["AIR_HOME"]}, f)
CheckpointManager("/Volumes/main/tr/runs/two", show=False).save(7, {"w": torch.arange(12.0), "b": torch.ones(3)})
dist.destroy_process_group()
"""

RESTORE_CELL = """
import torch, torch.distributed as dist
from air_magics.data import CheckpointManager
dist.init_process_group("gloo")
out = {"w": torch.zeros(12), "b": torch.zeros(3)}
step = CheckpointManager("/Volumes/main/tr/runs/two", show=False).load(out)
got = [None] * dist.get_world_size()
dist.all_gather_object(got, (step, out["w"].tolist(), out["b"].tolist()))
dist.destroy_process_group()
"""


def test_two_nodes_over_one_volume_then_a_restore_on_three_ranks(tmp_path, monkeypatch):
    """Two "nodes" (two launches with their own AIR_HOME and cache) x 2 ranks over one volume root,
    joined by torch's c10d rendezvous: each epoch hands every file to exactly one of the 4 ranks, and
    the checkpoint the 4 ranks saved loads on 3."""
    import json
    import socket

    from air_magics.torch_launcher import run_script
    from air_magics.volumes import VolumeStore

    monkeypatch.setenv("AIR_VOLUMES_ROOT", str(tmp_path / "volumes"))
    monkeypatch.delenv("AIR_VOLUMES_MOUNT", raising=False)
    store = VolumeStore()
    store.create("main.tr.data")
    store.create("main.tr.runs")
    for i in range(40):
        with store.open(f"/Volumes/main/tr/data/f{i:02d}.txt", "wb") as f:
            f.write(b"x" * i)
    (tmp_path / "out").mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runs: dict[int, object] = {}

    def node(r: int) -> None:
        try:
            runs[r] = run_script(
                TWO_NODES_CELL,
                nproc_per_node=2,
                nnodes="2",
                node_rank=r,
                rdzv_endpoint=f"127.0.0.1:{port}",
                timeout=240,
                write=lambda s: None,
                env={"AIR_HOME": str(tmp_path / f"home{r}"), "OUT": str(tmp_path / "out")},
            )
        except Exception as exc:  # reported below, on the test's thread
            runs[r] = exc

    threads = [threading.Thread(target=node, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert all(isinstance(runs.get(r), RankRun) for r in (0, 1)), runs
    ranks = [json.loads((tmp_path / "out" / f"rank{k}.json").read_text()) for k in range(4)]
    assert {r["home"] for r in ranks} == {str(tmp_path / "home0"), str(tmp_path / "home1")}
    everything = sorted(f"f{i:02d}.txt" for i in range(40))
    for epoch in (0, 1):
        handed = [name for r in ranks for name in r["epochs"][epoch]]
        assert sorted(handed) == everything  # each file exactly once per epoch, across the 4 ranks
    assert ranks[0]["epochs"][0] != ranks[0]["epochs"][1]  # a new shuffle each epoch
    # each node's view shows its two ranks' loaders (world 4, one launch), then the save across the
    # 4 ranks as rank 0's node reports it: what each rank wrote
    from air_magics.checkpoints.commit import checkpoint_status
    from air_magics.server.queries import cache_summary
    from air_magics.status import rank_loaders
    from air_magics.widgets import cache_html, cache_text

    seen = []
    for r in (0, 1):
        monkeypatch.setenv("AIR_HOME", str(tmp_path / f"home{r}"))
        here = rank_loaders()
        got = sorted(d["rank"] for d in here)
        seen.append(got)
        assert got in ([0, 1], [2, 3]) and {d["world"] for d in here} == {4} and len({d["launch"] for d in here}) == 1
        assert {d["files"] for d in here} == {40} and len({d["pid"] for d in here}) == 2
        assert f"rank {got[1]} of 4: " in cache_text() and f"rank {got[0]} of 4" in cache_html()
        assert "steps/s" in cache_text()
        assert sorted(d["rank"] for d in cache_summary()["loaders"]) == got
    assert sorted(seen) == [[0, 1], [2, 3]]
    monkeypatch.setenv("AIR_HOME", ranks[0]["home"])
    doc = checkpoint_status("/Volumes/main/tr/runs/two")
    save = doc["saves"][-1]
    distcp = [
        p for p in (tmp_path / "volumes" / "main" / "tr" / "runs" / "two" / "step_7").iterdir() if p.suffix == ".distcp"
    ]
    assert save["state"] == "committed" and len(save["rank_bytes"]) == 4
    assert sum(save["rank_bytes"]) == sum(p.stat().st_size for p in distcp) > 0
    from air_magics.widgets import checkpoints_text

    assert "from 4 ranks (" in checkpoints_text(doc)
    restored = run_script(RESTORE_CELL, nproc_per_node=3, timeout=240, return_name="got", write=lambda s: None)
    assert restored.value == [(7, [float(i) for i in range(12)], [1.0, 1.0, 1.0])] * 3


def test_a_traceback_is_found_among_a_ranks_interleaved_output():
    from air_magics.torch_launcher import last_traceback

    # torch tees stdout and stderr apart: a printed line can land inside or after the traceback
    lines = [
        "step 1\n",
        "Traceback (most recent call last):\n",
        '  File "cell.py", line 4, in <module>\n',
        "hi from 1\n",
        "    raise ValueError('boom')\n",
        "ValueError: boom\n",
        "after\n",
    ]
    assert last_traceback(lines) == (
        "Traceback (most recent call last):\n"
        '  File "cell.py", line 4, in <module>\n'
        "    raise ValueError('boom')\n"
        "ValueError: boom"
    )
    assert last_traceback(["a\n", "b\n"]) == "a\nb"  # no traceback: the last lines
    chained = lines[1:6] + ["\n", "During handling of the above exception, another exception occurred:\n"]
    chained += ["Traceback (most recent call last):\n", '  File "cell.py", line 9\n', "KeyError: 'x'\n"]
    assert last_traceback(chained).endswith("KeyError: 'x'") and last_traceback(chained).count("Traceback") == 1
