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
from typing import IO

import torch

from .direct_read import MemoryFile

__all__ = ["stored_tensor"]

_LOCAL_HEADER = 30  # bytes of a zip local file header before its name and extra field


def _stored_meta(record: IO[bytes]) -> torch.Tensor | None:
    """The tensor a ``torch.save`` record holds, on the meta device (dtype, shape, strides, offset;
    its data is not read); ``None`` when the record is not one plain dense tensor."""
    try:
        meta = torch.load(record, map_location="meta", weights_only=True)
    except Exception:  # not a record this reads: torch.load reads it, and reports what is wrong with it
        return None
    if type(meta) is not torch.Tensor or meta.layout != torch.strided or meta.is_quantized:
        return None
    return meta


def _stored_layout(record: IO[bytes]) -> tuple[torch.Tensor, int] | None:
    """The tensor a ``torch.save`` record holds (on the meta device) and where its data starts in
    the record; ``None`` unless it is one plain dense tensor in one uncompressed storage, in this
    machine's byte order. Reads the record's headers only (its central directory, the pickle, the
    local headers), never its data."""
    meta = _stored_meta(record)
    if meta is None:
        return None
    try:
        with zipfile.ZipFile(record) as zf:
            members = zf.infolist()
            data = [m for m in members if m.filename.rsplit("/", 2)[-2:-1] == ["data"]]
            order = [m for m in members if m.filename.endswith("/byteorder")]
            if len(data) != 1 or data[0].compress_type != zipfile.ZIP_STORED:
                return None
        if order:  # (not zf.read: the CRC32 it checks is not there in files written without one)
            record.seek(_data_start(record, order[0]))
            if record.read(order[0].file_size) != sys.byteorder.encode():
                return None
        info = data[0]
        if info.file_size != meta.untyped_storage().nbytes() or info.file_size % meta.element_size():
            return None
        return meta, _data_start(record, info)
    except Exception:  # not a record this reads: torch.load reads it, and reports what is wrong with it
        return None


def _data_start(record: IO[bytes], info: zipfile.ZipInfo) -> int:
    """Where member *info*'s bytes start in the zip *record*: after its local header."""
    record.seek(info.header_offset)
    head = record.read(_LOCAL_HEADER)
    if head[:4] != b"PK\x03\x04":
        raise ValueError("not a local file header")
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    return info.header_offset + _LOCAL_HEADER + name_len + extra_len


def stored_tensor(record: memoryview) -> torch.Tensor | None:
    """The tensor ``torch.save`` wrote into *record* (a writable buffer's view), sharing its memory;
    ``None`` when the record is not one plain dense tensor in one uncompressed storage."""
    layout = _stored_layout(MemoryFile(record))
    if layout is None:
        return None
    meta, start = layout
    nbytes = meta.untyped_storage().nbytes()
    if start + nbytes > record.nbytes:
        return None
    raw = record[start : start + nbytes]
    flat = torch.frombuffer(raw, dtype=meta.dtype) if nbytes else torch.empty(0, dtype=meta.dtype)
    return flat.as_strided(meta.size(), meta.stride(), meta.storage_offset())
