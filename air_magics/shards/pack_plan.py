"""What a pack run writes: list the source once, compare with the published manifest, assign the
files that need packing to shards deterministically. Pure except for the listing and reading the
previous indexes; nothing is written here.

Incremental rule: a published shard is *kept* when every member is still in the source with the
same size and mtime, and its file and index are intact on the destination (size and index
checksum). Every other file (new, changed, or a survivor of a shard that lost or changed a
member) goes into *new* shards, filled in order up to ``shard_size`` bytes of tar, a file larger
than that alone in its own shard. A shard's name is a digest of its member list, so the same files
always give the same shard name and a killed run's completed shards are found again.

Mixed order (the default): the files are placed in the order of a keyed hash of their names (a
seeded shuffle that depends on each name alone), not sorted by name, so every shard holds an even
mix of the folder (of its classes, when the folder is sorted by class). Why: a shuffled epoch over
a packed folder reads a few shards at a time (:mod:`.shard_order`: members shuffled within blocks of
``WINDOW`` shards); over shards packed in name order a class-sorted folder would give batches of one
or two classes. Mixed, each block is already a sample of the whole folder, and a batch mixes
classes as a full shuffle of the raw folder does, while the epoch still reads a bounded number of
shards at a time. The cost: an *unshuffled* epoch (name order) touches the shards in a random
order, so it needs most shards in the cache before it gets far. The listing (``PackedFolder.members``)
stays sorted by name; the index lists each shard's members in its offset order, as tar has them.
Adding a file moves no other file: only the new files are placed, in their own hash order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..io.versions import same_version
from ..volumes.walk import Entry
from .format import Manifest, Member, ShardInfo, member_bytes, shard_id, shard_names

__all__ = ["ShardPlan", "PackPlan", "fingerprint", "mix_key", "assign", "make_plan"]


@dataclass(frozen=True)
class ShardPlan:
    """A shard to write (or to find complete from a killed run): its files in order and its bytes."""

    sid: str
    files: tuple[Entry, ...]
    bytes: int

    @property
    def name(self) -> str:
        return shard_names(self.sid)[0]

    @property
    def index(self) -> str:
        return shard_names(self.sid)[1]

    @property
    def data_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class PackPlan:
    """The outcome of planning: shards kept from the published manifest, new ones to write, and
    the listing's fingerprint. ``unchanged``: the manifest already describes this source.
    ``superseded``: the shard and index names the published manifest names (removable once the new
    one is published); ``base_generation``: that of a folder in an older format, rewritten whole."""

    files: list[Entry]
    fingerprint: str
    kept: list[ShardInfo] = field(default_factory=list)
    new: list[ShardPlan] = field(default_factory=list)
    dropped: list[ShardInfo] = field(default_factory=list)
    previous: Manifest | None = None
    superseded: set[str] = field(default_factory=set)
    base_generation: int = 0

    @property
    def unchanged(self) -> bool:
        return (
            self.previous is not None
            and not self.new
            and not self.dropped
            and self.previous.fingerprint == self.fingerprint
        )

    @property
    def generation(self) -> int:
        """The generation the new manifest gets."""
        return (self.previous.generation if self.previous is not None else self.base_generation) + 1

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


def fingerprint(files: Sequence[Entry]) -> str:
    """Digest of the listing (names, sizes, mtimes, sorted): equal digests, nothing to do."""
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.rel}\0{f.size}\0{f.mtime!r}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:32]


def mix_key(rel: str) -> bytes:
    """A file's place in the mixed order: a keyed hash of its name (the same on every run)."""
    return hashlib.blake2b(rel.encode("utf-8", "surrogateescape"), digest_size=8, person=b"air-mix").digest()


def assign(files: Sequence[Entry], shard_size: int, *, mixed: bool = True) -> list[ShardPlan]:
    """*files* into shards of at most *shard_size* tar bytes (end blocks included), in the mixed
    order (:func:`mix_key`) or, with ``mixed=False``, by name; a file that alone exceeds it gets a
    shard of its own."""
    out: list[ShardPlan] = []
    cur: list[Entry] = []
    cur_bytes = 1024  # end-of-archive blocks

    def close() -> None:
        nonlocal cur, cur_bytes
        if cur:
            out.append(ShardPlan(shard_id([(f.rel, f.size, f.mtime) for f in cur]), tuple(cur), cur_bytes))
        cur, cur_bytes = [], 1024

    for f in sorted(files, key=(lambda f: (mix_key(f.rel), f.rel)) if mixed else (lambda f: f.rel)):
        cost = member_bytes(f.rel, f.size, f.mtime)
        if cur and cur_bytes + cost > shard_size:
            close()
        cur.append(f)
        cur_bytes += cost
        if cur_bytes > shard_size:  # a file larger than a shard: alone
            close()
    close()
    return out


def _same(m: Member, f: Entry | None) -> bool:
    return f is not None and same_version(f.size, f.mtime, m.src_size, m.mtime)


def make_plan(
    files: Sequence[Entry],
    shard_size: int,
    previous: Manifest | None,
    previous_members: dict[str, list[Member] | None],
    *,
    mixed: bool = True,
) -> PackPlan:
    """Plan a run. *previous_members* maps each published shard's name to its members, or to None
    when its file or index is missing or damaged on the destination (it is then rewritten)."""
    files = sorted(files, key=lambda f: f.rel)
    plan = PackPlan(list(files), fingerprint(files), previous=previous)
    if previous is not None:
        plan.superseded = {n for s in previous.shards for n in (s.name, s.index)}
    by_name = {f.rel: f for f in files}
    covered: set[str] = set()
    for shard in previous.shards if previous is not None else ():
        members = previous_members.get(shard.name)
        if members is not None and all(_same(m, by_name.get(m.name)) for m in members):
            plan.kept.append(shard)
            covered.update(m.name for m in members)
        else:
            plan.dropped.append(shard)
    plan.new = assign([f for f in files if f.rel not in covered], shard_size, mixed=mixed)
    return plan
