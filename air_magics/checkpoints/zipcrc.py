"""Checkpoint files without ``torch.save``'s zip CRC32 (issue 34).

Why: torch's DCP writer stores each tensor with ``torch.save``, whose zip records carry a CRC32 of
every byte: 19 ms per 32 MB here, 0.15 s of CPU for a 256 MB state, as much as 8 plain writers'
whole save on this machine. A checkpoint written by ``UCVolumeWriter`` carries its own checksum of
every file (:mod:`.digests`), verified on each load, so the zip's is a second one that nobody
reads: ``torch.load`` does not check it (a zip tool's ``testzip`` would flag the records).

The switch is torch's public ``torch.serialization.set_crc32_options``, which torch keeps per thread
(a ``ContextVar``): :func:`no_zip_crc32` sets it in torch's own writer thread for the one file that
thread writes, so no other thread's ``torch.save`` is touched. ``UCVolumeWriter(zip_crc32=True)``
keeps the CRCs; :class:`StagingFS` is torch's plain ``FileSystem`` with the same switch, for saves
staged on local disk.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager

from torch.distributed.checkpoint.filesystem import FileSystem

__all__ = ["no_zip_crc32", "StagingFS"]


@contextmanager
def no_zip_crc32() -> Iterator[None]:
    """Run the block with this thread's ``torch.save`` writing no zip CRC32 (then as before)."""
    import torch.serialization as ts

    before = ts.get_crc32_options()
    ts.set_crc32_options(False)
    try:
        yield
    finally:
        ts.set_crc32_options(before)


class StagingFS(FileSystem):
    """torch's local ``FileSystem``; a file written with ``zip_crc32=False`` gets no zip CRC32."""

    def __init__(self, zip_crc32: bool = False) -> None:
        super().__init__()
        self.zip_crc32 = zip_crc32

    @contextmanager
    def create_stream(self, path: str | os.PathLike[str], mode: str) -> Iterator[io.IOBase]:
        with super().create_stream(path, mode) as stream:
            if self.zip_crc32 or "w" not in mode:
                yield stream
            else:
                with no_zip_crc32():
                    yield stream
