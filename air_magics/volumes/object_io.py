"""Whole objects written and read on a registered (fsspec) volume in the fewest requests, large ones in
parallel parts.

Why a module of its own: object stores have no rename and charge per request, so what a checkpoint
writes is put once under its final name and read back without a HEAD first. fsspec's generic calls
ask before they act (``exists``, ``info``, ``makedirs``: a HEAD, then a listing when the HEAD says
404, a HeadBucket per ``makedirs``); the calls here go straight to the one request that does the work:

- :func:`put_file`: one PUT, or above ``2 x part_bytes`` a multipart upload whose parts go up in
  parallel (s3fs's ``max_concurrency``);
- :func:`put_bytes`: one PUT of bytes in memory;
- :func:`read_object`: one GET, or for an object larger than ``part_bytes`` whose size is known
  parallel ranged GETs into one buffer;
- :func:`read_small`: one GET of a small object, ``None`` when it is not there (no HEAD, no listing);
- :func:`list_tree`: every object under a prefix, from one listing (one ListObjectsV2 per 1,000 keys);
- :func:`delete_objects`: objects deleted in one batch (one DeleteObjects per 1,000 keys);
- :func:`remove_tree`: a folder's objects deleted: one listing (none when the names are known) and one batch.

A refusal of the store is the one-line :class:`~air_magics.errors.StorageAccessError`
(:func:`~air_magics.volumes.objectfs.access_error`); transient errors are retried.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..io.retry import retry_call
from .objectfs import access_error

__all__ = [
    "PART_BYTES",
    "PART_CONCURRENCY",
    "put_file",
    "put_bytes",
    "read_object",
    "read_small",
    "list_tree",
    "delete_objects",
    "remove_tree",
]

PART_BYTES = 16 << 20  # a multipart upload's part, a ranged read's range
PART_CONCURRENCY = 16  # parts in flight at once (of one object, or shared by those uploaded together)

_S3 = frozenset({"s3", "s3a"})


def _is_s3(fs: Any) -> bool:
    p = getattr(fs, "protocol", ())
    return bool(_S3.intersection((p,) if isinstance(p, str) else p))


def _url(fs: Any, path: str) -> str:
    url = getattr(fs, "url", None)
    return url(path) if callable(url) else path


def put_file(
    fs: Any, local: str, path: str, *, part_bytes: int = PART_BYTES, concurrency: int = PART_CONCURRENCY
) -> None:
    """Upload local file *local* to *path*: one PUT, or a multipart upload of *part_bytes* parts,
    *concurrency* of them in flight, when it is larger than ``2 x part_bytes`` (s3; other stores: the
    backend's own ``put_file``). No HEAD, no listing, no folder made (an object store has none)."""
    kwargs = {"chunksize": part_bytes, "max_concurrency": concurrency} if _is_s3(fs) else {}
    try:
        retry_call(lambda: fs.put_file(local, path, **kwargs))
    except PermissionError as exc:
        raise access_error(exc, _url(fs, path)) from None


def put_bytes(fs: Any, path: str, data: bytes) -> None:
    """Write *data* as the object at *path* (one PUT, whole: a reader sees the old object or this one)."""
    try:
        retry_call(lambda: fs.pipe_file(path, data))
    except PermissionError as exc:
        raise access_error(exc, _url(fs, path)) from None


def read_small(fs: Any, path: str) -> bytes | None:
    """The bytes of the small object at *path* (one GET), or ``None`` when there is none."""
    try:
        return retry_call(lambda: fs.cat_file(path))
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        raise access_error(exc, _url(fs, path)) from None


def read_object(fs: Any, path: str, size: int | None = None, *, part_bytes: int = PART_BYTES) -> bytearray:
    """The object at *path* in one buffer: one GET, or, when its *size* is known and larger than
    *part_bytes*, ranges of *part_bytes* read in parallel (one request each, no HEAD). A missing
    object raises ``FileNotFoundError``; an object shorter than *size* gives what it holds."""
    try:
        if size is None or size <= part_bytes:
            return bytearray(retry_call(lambda: fs.cat_file(path)))
        starts = list(range(0, size, part_bytes))
        ends = [min(s + part_bytes, size) for s in starts]
        parts = retry_call(lambda: fs.cat_ranges([path] * len(starts), starts, ends, on_error="raise"))
    except PermissionError as exc:
        raise access_error(exc, _url(fs, path)) from None
    buf = bytearray(size)
    at = 0
    for i, part in enumerate(parts):
        if isinstance(part, BaseException):
            raise part
        buf[at : at + len(part)] = part
        at += len(part)
        parts[i] = b""  # (let it go as soon as it is copied)
        if len(part) < ends[i] - starts[i]:  # the object ends here
            break
    if at < size:
        del buf[at:]
    return buf


def list_tree(fs: Any, path: str) -> dict[str, dict[str, Any]]:
    """Every object under folder *path*, by name relative to it (``a/b``), with its listing's
    details: one listing (no HEAD first; a missing or empty prefix lists nothing)."""
    base = path.rstrip("/")
    parent, _, name = base.rpartition("/")
    try:
        # s3: the folder as a prefix of its parent's listing (a find of an empty folder asks a HEAD and
        # a listing more, to tell a file from nothing)
        found = fs.find(parent, prefix=name + "/", detail=True) if _is_s3(fs) and parent else fs.find(base, detail=True)
    except FileNotFoundError:
        return {}
    except PermissionError as exc:
        raise access_error(exc, _url(fs, base)) from None
    strip = base.lstrip("/") + "/"
    out = {}
    for name, info in found.items():
        name = name.lstrip("/")
        if name.startswith(strip) and info.get("type") != "directory":
            out[name[len(strip) :]] = info
    return out


def delete_objects(fs: Any, paths: Iterable[str]) -> None:
    """Delete the objects *paths* (one batch request per 1,000 on s3; missing ones are no error)."""
    paths = list(paths)
    if not paths:
        return
    try:
        retry_call(lambda: fs.rm(paths))
    except FileNotFoundError:
        pass
    except PermissionError as exc:
        raise access_error(exc, _url(fs, paths[0])) from None


def remove_tree(fs: Any, path: str, names: Iterable[str] | None = None) -> None:
    """Delete folder *path* and everything under it: on s3 its objects (*names*, relative, when the
    caller listed them; else one listing) in one batch; elsewhere the backend's recursive remove,
    which knows its folders (a missing folder is no error)."""
    base = path.rstrip("/")
    if not _is_s3(fs):
        try:
            retry_call(lambda: fs.rm(base, recursive=True))
        except FileNotFoundError:
            pass
        except PermissionError as exc:
            raise access_error(exc, _url(fs, base)) from None
        return
    names = list_tree(fs, base) if names is None else names
    delete_objects(fs, [f"{base}/{n}" for n in names])
