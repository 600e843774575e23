"""``stored_tensor``: the tensor inside one ``torch.save`` record, as a view of the bytes already read.

Why (issue 34): torch's DCP reader hands each item's bytes to ``torch.load``, which copies them into
a new storage (20 ms per 32 MB here), and then copies that tensor into the destination: two copies
of every byte on the restore's critical path, on the same cores as the mount's server. The record's
layout is public: a zip archive (``torch.save``'s format since 1.6) whose one ``data/<key>`` member
holds the storage's bytes uncompressed; ``torch.load(..., map_location="meta")`` gives the tensor's
dtype, shape, strides and offset without reading them. So the destination gets one copy, straight
from the verified buffer. Anything else (several storages, a compressed member, another byte order,
a tensor subclass) returns ``None`` and goes through ``torch.load`` as before.
"""

from __future__ import annotations

import struct
import sys
import zipfile
from typing import Any

import torch

from .direct_read import MemoryFile

__all__ = ["stored_tensor"]

_LOCAL_HEADER = 30  # bytes of a zip local file header before its name and extra field


def stored_tensor(record: memoryview) -> torch.Tensor | None:
    """The tensor ``torch.save`` wrote into *record* (a writable buffer's view), sharing its memory;
    ``None`` when the record is not one plain dense tensor in one uncompressed storage."""
    try:
        meta = torch.load(MemoryFile(record), map_location="meta", weights_only=True)
        if type(meta) is not torch.Tensor or meta.layout != torch.strided or meta.is_quantized:
            return None
        with zipfile.ZipFile(MemoryFile(record)) as zf:
            members = zf.infolist()
        data = [m for m in members if m.filename.rsplit("/", 2)[-2:-1] == ["data"]]
        order = [m for m in members if m.filename.endswith("/byteorder")]
        if len(data) != 1 or data[0].compress_type != zipfile.ZIP_STORED:
            return None
        if order and bytes(_member(record, order[0])) != sys.byteorder.encode():
            return None
        raw = _member(record, data[0])
        if raw.nbytes != meta.untyped_storage().nbytes() or raw.nbytes % meta.element_size():
            return None
        flat = torch.frombuffer(raw, dtype=meta.dtype) if raw.nbytes else torch.empty(0, dtype=meta.dtype)
        return flat.as_strided(meta.size(), meta.stride(), meta.storage_offset())
    except Exception:  # not a record this reads: torch.load reads it, and reports what is wrong with it
        return None


def _member(record: memoryview, info: zipfile.ZipInfo) -> memoryview:
    """The bytes of stored member *info* of the zip in *record* (no copy)."""
    at = info.header_offset
    head: Any = record[at : at + _LOCAL_HEADER]
    if bytes(head[:4]) != b"PK\x03\x04":
        raise ValueError("not a local file header")
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    start = at + _LOCAL_HEADER + name_len + extra_len
    if start + info.file_size > record.nbytes:
        raise ValueError("member runs past the record")
    return record[start : start + info.file_size]
