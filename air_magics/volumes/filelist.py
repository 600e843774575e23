"""``FileList``: the files of one folder's listing, kept as one string of names.

Why: a dataset of a million files used to hold a :class:`~air_magics.volumes.resolved.VolumeFile`
per file, made before the first item (three strings and two objects, ~580 B a file), and each
DataLoader worker's copy grew as reading it touched every object's reference count (the
copy-on-read growth PyTorch documents). Here the names are one ``str`` (``\\0`` never appears in a
file name), their offsets one ``array``, the versions two more: ~40 B a file at two levels of
folders, a few objects in all, pickled to a worker as a few flat buffers.

An item is made when it is asked for (``files[i]``): a :class:`ListedFile`, a ``VolumeFile`` whose
``size`` and ``mtime`` are the list's own entries, so what a fetch or a validation learns about the
file stays known for the next epoch, as it did on a plain ``VolumeFile``.
"""

from __future__ import annotations

import itertools
import math
import mmap
import struct
from array import array
from collections.abc import Iterator, Sequence
from typing import Protocol, overload

from ..errors import VolumePathError
from .location import Location
from .resolved import VolumeFile, slot_of

__all__ = ["FileList", "ListedFile"]


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...


_SEP = "\0"
_UNKNOWN_SIZE = struct.pack("q", -1)
_UNKNOWN_MTIME = struct.pack("d", math.nan)


class ListedFile(VolumeFile):
    """One item of a :class:`FileList`: its version read from, and written to, the list."""

    __slots__ = ("_owner", "_i")

    def __init__(self, owner: FileList, i: int, key: str, slot: str) -> None:
        self._owner, self._i = owner, i
        self.key, self.slot, self.member = key, slot, None

    @property  # type: ignore[override]
    def src(self) -> Location:
        """Where the bytes are: made when asked (a warm hit never asks)."""
        return self._owner.source(self._i)

    @property  # type: ignore[override]
    def size(self) -> int | None:
        n = self._owner.sizes[self._i]
        return None if n < 0 else n

    @size.setter
    def size(self, value: int | None) -> None:
        self._owner.sizes[self._i] = -1 if value is None else value

    @property  # type: ignore[override]
    def mtime(self) -> float | None:
        t = self._owner.mtimes[self._i]
        return None if math.isnan(t) else t

    @mtime.setter
    def mtime(self, value: float | None) -> None:
        self._owner.mtimes[self._i] = math.nan if value is None else value

    def __reduce__(self) -> tuple[type, tuple]:
        # sent alone (to another process), it becomes a plain VolumeFile: never the whole list
        return VolumeFile, (self.key, self.src, self.size, self.mtime, self.slot, None)

    def __repr__(self) -> str:
        return f"ListedFile(key={self.key!r}, size={self.size!r}, mtime={self.mtime!r}, slot={self.slot!r})"


def _versions(n: int, sizes: bytes | None = None, mtimes: bytes | None = None) -> tuple[memoryview, memoryview]:
    """The sizes (``'q'``, -1: not known) and mtimes (``'d'``, NaN: not known) of *n* files, in
    memory shared with forked children (an anonymous ``mmap`` is ``MAP_SHARED``). Why: a DataLoader
    worker fills them in as it fetches; in private memory each page it wrote became its own copy
    (up to 16 B per listed file in every worker), here the pages stay one copy, and what one worker
    learns of a file's version the others and the main process see too."""
    size = max(n, 1) * 8
    out = []
    for fmt, data, unknown in (("q", sizes, _UNKNOWN_SIZE), ("d", mtimes, _UNKNOWN_MTIME)):
        mm = mmap.mmap(-1, size)
        mm.write(data if data is not None else unknown * n)
        out.append(memoryview(mm).cast(fmt)[:n])
    return out[0], out[1]


class FileList(Sequence[VolumeFile]):
    """The files below one volume folder (``base_key``, stored at ``base``), in sorted order.

    ``names``: the files' paths relative to the folder, sorted, none empty. ``slot_root`` is the
    folder's place in a cache (``FileCache.bind`` sets it): a file's slot is ``slot_root/name``."""

    def __init__(self, base_key: str, base: Location, names: Sequence[str]) -> None:
        self.base_key, self.base = base_key.rstrip("/"), base
        self._text = _SEP.join(names)
        if self._text.count(_SEP) != max(len(names) - 1, 0) or not all(names[:1]):
            raise VolumePathError(
                f"FileList names are non-empty relative paths without NUL; got {list(names[:3])!r}...: "
                "list a folder with VolumeStore.names()"
            )
        # starts[i]: where name i begins in _text; starts[n]: one past the end (plus the separator)
        self._starts = array("q", itertools.accumulate((len(n) + 1 for n in names), initial=0))
        self.sizes, self.mtimes = _versions(len(names))
        self.slot_root = ""
        self._src_root = base.path.rstrip("/")

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["sizes"], state["mtimes"] = self.sizes.tobytes(), self.mtimes.tobytes()
        return state

    def __setstate__(self, state: dict) -> None:
        sizes, mtimes = state.pop("sizes"), state.pop("mtimes")
        self.__dict__.update(state)
        self.sizes, self.mtimes = _versions(len(self), sizes, mtimes)

    def __len__(self) -> int:
        return len(self._starts) - 1

    def name(self, i: int) -> str:
        """File *i*'s path relative to the folder."""
        starts = self._starts
        return self._text[starts[i] : starts[i + 1] - 1]

    @overload
    def __getitem__(self, i: int) -> VolumeFile: ...
    @overload
    def __getitem__(self, i: slice) -> list[VolumeFile]: ...
    def __getitem__(self, i: int | slice) -> VolumeFile | list[VolumeFile]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self._starts) - 1
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"FileList index {i} out of range: it has {n} files")
        starts = self._starts
        rel = self._text[starts[i] : starts[i + 1] - 1]
        return ListedFile(self, i, f"{self.base_key}/{rel}", f"{self.slot_root}/{rel}" if self.slot_root else "")

    def key(self, i: int) -> str:
        """File *i*'s volume path (no item made)."""
        starts = self._starts
        return f"{self.base_key}/{self._text[starts[i] : starts[i + 1] - 1]}"

    def run(self, block: Sequence[int]) -> tuple[list[str], list[str], list[int], list[float]]:
        """The names, volume paths, sizes and mtimes of the files in *block* (indices in range),
        made at once for a warm run (a size of -1: not known; then its mtime is NaN)."""
        text, starts, sizes, mtimes = self._text, self._starts, self.sizes, self.mtimes
        rels = [text[starts[i] : starts[i + 1] - 1] for i in block]
        prefix = self.base_key + "/"
        return rels, [prefix + r for r in rels], [sizes[i] for i in block], [mtimes[i] for i in block]

    def slots(self, rels: Sequence[str]) -> list[str]:
        """The cache slots of the files named *rels* (see :meth:`bind`)."""
        prefix = self.slot_root + "/"
        return [prefix + r for r in rels]

    def source(self, i: int) -> Location:
        """File *i*'s :class:`~air_magics.volumes.location.Location`."""
        base = self.base
        if base.fs is None:
            return Location(f"{self._src_root}/{self.name(i)}", None, base.root)
        return base.join(self.name(i))

    def __iter__(self) -> Iterator[VolumeFile]:
        for i in range(len(self)):
            yield self[i]

    def hash_keys(self, h: Hasher) -> None:
        """Feed *h* (a ``hashlib`` object) the UTF-8 of every file's volume path, one per line:
        ``h.update("\\n".join(f.key for f in files).encode())``, made as bytes at once (90 ms for a
        million files; the text way took 150)."""
        if len(self):
            prefix = (self.base_key + "/").encode()
            h.update(prefix)
            h.update(self._text.encode("utf-8", "surrogateescape").replace(_SEP.encode(), b"\n" + prefix))

    def bind(self, files_root: str) -> None:
        """Place the files in a cache whose files live under *files_root* (see ``FileCache.bind``)."""
        self.slot_root = slot_of(files_root, self.base_key)

    def __repr__(self) -> str:
        return f"FileList({self.base_key!r}, {len(self)} files)"
