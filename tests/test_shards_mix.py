"""Shuffle quality of a packed folder: on a class-sorted folder (4 class folders, batch 64) a shuffled
epoch over the packed folder mixes classes per batch as well as a shuffle of the raw folder does
(mean largest-class share within 0.05), because pack places members in a mixed order across
shards; packed in name order, the shard-windowed shuffle gives batches of one or two classes."""

from pathlib import Path
from statistics import mean

from air_magics.datasets.epoch_order import epoch_order
from air_magics.shards import open_packed, pack
from air_magics.shards.format import member_bytes
from air_magics.shards.pack_plan import assign
from air_magics.volumes import VolumeStore
from air_magics.volumes.walk import Entry

CLASSES, PER_CLASS, SIZE, BATCH = 4, 300, 512, 64
SHARD = 150 * member_bytes("class0/000.bin", SIZE, 0) + 1024  # 8 shards of 150, as in the issue


def _largest_share(order: list[int], labels: list[str]) -> float:
    """Mean over full batches of the share of the batch's most frequent class."""
    shares = []
    for k in range(0, len(order) - BATCH + 1, BATCH):
        batch = [labels[i] for i in order[k : k + BATCH]]
        shares.append(max(batch.count(c) for c in set(batch)) / BATCH)
    return mean(shares)


def _mix(groups: list[int] | None, labels: list[str], epochs: int = 5) -> float:
    n = len(labels)
    return mean(
        _largest_share(epoch_order(n, seed=7, epoch=e, shuffle=True, groups=groups), labels) for e in range(epochs)
    )


def _files() -> list[Entry]:
    return [Entry(f"class{c}/{i:03d}.bin", SIZE, 0.0) for c in range(CLASSES) for i in range(PER_CLASS)]


def _groups(shards, names: list[str]) -> list[int]:
    shard_of = {f.rel: s for s, sp in enumerate(shards) for f in sp.files}
    return [shard_of[n] for n in names]


def test_mixed_pack_shuffles_classes_as_well_as_the_raw_folder():
    files = _files()
    names = sorted(f.rel for f in files)
    labels = [n.split("/")[0] for n in names]
    raw = _mix(None, labels)
    mixed_shards = assign(files, SHARD, mixed=True)
    sorted_shards = assign(files, SHARD, mixed=False)
    assert len(mixed_shards) == len(sorted_shards) == 8
    mixed = _mix(_groups(mixed_shards, names), labels)
    by_name = _mix(_groups(sorted_shards, names), labels)
    assert abs(mixed - raw) <= 0.05, (mixed, raw)
    assert by_name > raw + 0.1, (by_name, raw)  # the problem the mixed order removes
    # every shard mixes the classes: none holds more than half of its members from one class
    for sp in mixed_shards:
        top = max(sum(f.rel.startswith(f"class{c}/") for f in sp.files) for c in range(CLASSES))
        assert top / len(sp.files) < 0.5


def test_a_real_pack_of_a_class_sorted_folder_mixes_every_shard():
    store = VolumeStore()
    store.create("main.raw.img")
    root = Path(store.locate("/Volumes/main/raw/img/train").path)
    for f in _files():
        p = root / f.rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * SIZE)
    pack("/Volumes/main/raw/img/train", "/Volumes/main/raw/img/packed", shard_size=SHARD)
    folder = open_packed(store, "/Volumes/main/raw/img/packed")
    names = [r.name for r in folder.members]
    assert names == sorted(names) and len(folder.manifest.shards) == 8  # the listing stays sorted by name
    labels = [n.split("/")[0] for n in names]
    assert abs(_mix([r.shard for r in folder.members], labels) - _mix(None, labels)) <= 0.05


def test_the_mixed_order_is_stable_when_files_are_added():
    files = _files()
    before = assign(files, SHARD)
    after = assign(files + [Entry("class9/new.bin", SIZE, 0.0)], SHARD)
    where = [f.rel for sp in after for f in sp.files]
    assert [f.rel for sp in before for f in sp.files] == [r for r in where if r != "class9/new.bin"]
