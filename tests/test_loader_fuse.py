"""DataLoader over a real FUSE volume: what persistent workers learn from each other.

The dataset lists names only; a worker learns a file's version from the copy it makes (cold) and
records in the cache's index when it checked it against the source. A warm epoch that reshuffles
files onto the other worker validates those hits from the index (checked during this run, by a
sibling) without a round trip per file.
"""

import json
import time

import pytest

from air_magics.data import DataLoader, UCVolumeDataset

N = 120


@pytest.fixture
def mounted(slowfs, tmp_path, monkeypatch):
    top = tmp_path / "backing" / "main" / "raw" / "img" / "d"
    top.mkdir(parents=True)
    for i in range(N):
        (top / f"f{i:03d}.bin").write_bytes(i.to_bytes(2, "big") * 500)
    stats = tmp_path / "stats.json"
    with slowfs.mounted(
        tmp_path / "backing", tmp_path / "mnt", op_latency_ms=1, attr_timeout=0, entry_timeout=0, stats=stats
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        yield stats


def ops(stats, settle: float = 0.6) -> dict:
    time.sleep(settle)  # slowfs rewrites its counters every 0.25 s
    return json.loads(stats.read_text())["ops"]


def test_persistent_workers_validate_warm_hits_with_the_main_process_versions(mounted):
    ds = UCVolumeDataset("/Volumes/main/raw/img/d", shuffle=True, seed=1)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    assert sorted(open(p, "rb").read()[:2] for p in loader) == sorted(i.to_bytes(2, "big") for i in range(N))
    before = ops(mounted)
    got = [open(p, "rb").read() for p in loader]  # epoch 2: files reshuffled onto the other worker
    after = ops(mounted)
    assert len(got) == N and ds.cache.info().hits >= N
    getattrs = after.get("getattr", 0) - before.get("getattr", 0)
    opens = after.get("open", 0) - before.get("open", 0)
    assert opens == 0 and getattrs < N // 4, (getattrs, opens)  # not a stat per file
