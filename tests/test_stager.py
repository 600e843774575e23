"""BufferStager: the background copy a staged checkpoint save writes from (air_magics.checkpoints.stager)."""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict

import pytest

torch = pytest.importorskip("torch")

from air_magics.checkpoints.dcp_calls import default_stager  # noqa: E402
from air_magics.checkpoints.stager import BufferStager  # noqa: E402


def _stager(calls: list[str] | None = None) -> BufferStager:
    def fallback():
        if calls is not None:
            calls.append("fallback")
        return default_stager()

    return BufferStager(fallback)


def test_the_copy_is_exact_and_independent_of_later_changes():
    big = torch.randn(5_000_000)  # 20 MB: two copy jobs on the pool's threads
    state = {"model": {"w": big, "b": torch.arange(7, dtype=torch.float64)}, "step": 3, "name": "run"}
    was = big.clone()
    st = _stager()
    staged = st.stage(state).result()
    big.add_(1.0)  # the optimizer's step, after the copy is done
    assert torch.equal(staged["model"]["w"], was)
    assert torch.equal(staged["model"]["b"], torch.arange(7, dtype=torch.float64))
    assert staged["step"] == 3 and staged["name"] == "run"
    assert staged["model"]["w"].data_ptr() != big.data_ptr()


def test_buffers_are_reused_while_the_layout_holds_and_made_again_when_it_changes():
    state = {"w": torch.randn(1000), "v": torch.randn(10)}
    st = _stager()
    first = st.stage(state).result()
    ptr = first["w"].data_ptr()
    state["w"].mul_(2.0)
    second = st.stage(state).result()
    assert second["w"].data_ptr() == ptr and torch.equal(second["w"], state["w"])
    state["w"] = torch.randn(2000)  # another shape: a new buffer
    del state["v"]
    third = st.stage(state).result()
    assert third["w"].shape == (2000,) and torch.equal(third["w"], state["w"]) and "v" not in third
    assert ("v",) not in st._buffers  # noqa: SLF001 - the gone name's buffer is let go
    st.close()
    assert st._buffers == {}  # noqa: SLF001


def test_odd_layouts_containers_and_tied_weights_are_staged_as_they_are():
    base = torch.randn(64, 32)
    tied = torch.nn.Parameter(torch.randn(16, 8))
    state = {
        "t": base.t(),  # transposed: not contiguous
        "slice": base[::2, 5:9],  # strided view of part of a storage
        "empty": torch.empty(0, 3),
        "scalar": torch.tensor(2.5),
        "emb": tied,
        "head": tied,  # the same tensor under two names
        "groups": [{"lr": 0.1, "params": [0, 1]}, ("a", torch.ones(2))],
        "ordered": OrderedDict(b=torch.zeros(3), a=1),
        "counts": defaultdict(int, x=2),
    }
    staged = _stager().stage(state).result()
    for key in ("t", "slice", "empty", "scalar"):
        assert staged[key].shape == state[key].shape and torch.equal(staged[key], state[key]), key
    assert torch.equal(staged["emb"], tied) and staged["emb"] is staged["head"]
    assert not staged["emb"].requires_grad and type(staged["emb"]) is torch.Tensor
    assert staged["groups"][0] == {"lr": 0.1, "params": [0, 1]} and staged["groups"][0] is not state["groups"][0]
    assert isinstance(staged["groups"][1], tuple) and torch.equal(staged["groups"][1][1], torch.ones(2))
    assert type(staged["ordered"]) is OrderedDict and list(staged["ordered"]) == ["b", "a"]
    assert type(staged["counts"]) is defaultdict and staged["counts"]["missing"] == 0


class _Marked(torch.Tensor):
    pass


def test_a_state_it_does_not_copy_itself_goes_to_torchs_stager():
    calls: list[str] = []
    odd = torch.eye(4).as_subclass(_Marked)  # a tensor subclass (as DTensor is): torch's own semantics
    st = _stager(calls)
    staged = st.stage({"s": odd, "w": torch.ones(3)}).result()
    assert calls == ["fallback"] and type(staged["s"]) is _Marked and torch.equal(staged["s"], torch.eye(4))
    assert staged["s"].data_ptr() != odd.data_ptr()
    st.stage({"w": torch.ones(3)}).result()  # a plain state again: copied here, the fallback kept
    assert calls == ["fallback"]
    st.close()


def test_a_value_that_cannot_be_copied_fails_the_future_not_the_call():
    fut = _stager().stage({"w": torch.ones(2), "lock": threading.Lock()})
    with pytest.raises(TypeError, match="lock"):
        fut.result()


def test_async_save_writes_the_staged_state_with_torchs_own_reader(tmp_path):
    import torch.distributed.checkpoint as dcp

    state = {"w": torch.randn(300_000), "step": torch.tensor(5)}
    before = {k: v.clone() for k, v in state.items()}
    st = _stager()
    resp = dcp.async_save(state, storage_writer=dcp.FileSystemWriter(str(tmp_path)), async_stager=st)
    resp.staging_completion.result()
    state["w"].zero_()  # the step, once the copy is taken
    resp.upload_completion.result()
    out = {"w": torch.empty(300_000), "step": torch.tensor(0)}
    dcp.load(out, storage_reader=dcp.FileSystemReader(str(tmp_path)))
    assert torch.equal(out["w"], before["w"]) and int(out["step"]) == 5
    st.close()
