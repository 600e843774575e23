"""A process's view of one cached shard (the read-only map its members are served from, and which
of them are verified in it), and the small file steps the shard fetchers share."""

from __future__ import annotations

import mmap
import os
import threading

__all__ = ["ShardMap", "map_file", "unlink_quiet"]


class ShardMap:
    """This process's view of one shard: the map its verified members are read from."""

    def __init__(self, members: int) -> None:
        self.cond = threading.Condition()  # guards the fields; notified as members verify
        self.verifying = threading.Lock()  # held by the one thread checking a whole finished file
        self.mm: mmap.mmap | None = None
        self.ino = -1  # the mapped file's inode: ok[] holds for that file only
        self.ok = bytearray(members)  # member j (offset order) verified in self.mm
        self.running = False
        self.done = False
        self.error: BaseException | None = None
        self.used = False  # a member was asked for: the read-ahead from this shard has started
        self.renewed = 0.0  # monotonic time its cache entry was last renewed by this process
        self.counted = False  # this process counted its hit (or fetched it)
        self.no_room = -1  # the process's hand-out count when its claim found no room (-1: none refused)
        self.evicted = False  # its entry was found gone: any file at its slot is not the cache's

    def use(self, mm: mmap.mmap, ino: int) -> None:
        """Read from *mm* from now on (call with ``cond`` held); a different file's checks do not carry."""
        if ino != self.ino:
            self.ok = bytearray(len(self.ok))
        self.mm, self.ino = mm, ino


def map_file(path: str, size: int) -> tuple[mmap.mmap, int] | None:
    """A read-only map of *path* and its inode, or None when it is missing or not *size* bytes yet."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_size != size:
            return None
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ), st.st_ino
    finally:
        os.close(fd)


def unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
