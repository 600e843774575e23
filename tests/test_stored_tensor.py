"""stored_tensor: the tensor inside one torch.save record as a view of its bytes (the restore's one
copy); anything that is not one plain dense tensor is left to torch.load (None)."""

import io

import pytest
import torch

from air_magics.checkpoints.stored_tensor import stored_tensor


def _record(obj) -> bytearray:
    b = io.BytesIO()
    torch.save(obj, b)
    return bytearray(b.getvalue())


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(3, 5),
        lambda: torch.randn(4, 6).t(),  # strides of a transposed tensor, storage the same size
        lambda: torch.arange(100, dtype=torch.int64)[10:30],  # a view: torch.save keeps the whole storage
        lambda: torch.randn(7).to(torch.bfloat16),
        lambda: torch.tensor([True, False, True]),
        lambda: torch.tensor(3.5),  # 0-dim
        lambda: torch.empty(0, 4),
    ],
    ids=["plain", "transposed", "view", "bf16", "bool", "scalar", "empty"],
)
def test_the_tensor_comes_back_exactly_as_saved(make):
    t = make()
    got = stored_tensor(memoryview(_record(t)))
    assert got is not None
    assert got.dtype == t.dtype and got.shape == t.shape and got.stride() == t.stride() and torch.equal(got, t)


def test_it_is_a_view_of_the_record_not_a_copy():
    rec = _record(torch.zeros(1000))
    got = stored_tensor(memoryview(rec))
    rec[rec.index(b"\x00" * 4000) : rec.index(b"\x00" * 4000) + 4] = torch.tensor([2.0]).numpy().tobytes()
    assert got.sum().item() == 2.0


@pytest.mark.parametrize(
    "obj", [{"a": torch.ones(2)}, [1, 2], torch.ones(2, 2).to_sparse()], ids=["dict", "list", "sparse"]
)
def test_anything_but_one_plain_tensor_is_left_to_torch(obj):
    assert stored_tensor(memoryview(_record(obj))) is None


def test_a_damaged_record_is_left_to_torch():
    rec = _record(torch.randn(100))
    assert stored_tensor(memoryview(rec[: len(rec) // 2])) is None  # no central directory
    assert stored_tensor(memoryview(bytearray(b"not a zip at all" * 10))) is None


def test_a_record_written_without_zip_crc32_is_read_the_same():
    """What UCVolumeWriter writes (no CRC32 in the zip records: zip tools that check it would refuse)."""
    from air_magics.checkpoints.zipcrc import no_zip_crc32

    t = torch.randn(6, 4)
    with no_zip_crc32():
        rec = _record(t)
    got = stored_tensor(memoryview(rec))
    assert got is not None and torch.equal(got, t)
