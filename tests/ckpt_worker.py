"""Helper processes for tests/test_checkpoint.py.

`save2 RANK PORT`: one of 2 gloo ranks; trains a step, consumes 3 batches, saves step 5 with the manager.
`slow_save SIZE_MB`: saves step 1 (small) then step 2 (SIZE_MB of weights) and prints progress.
`kill_prune DIR`: saves steps 1-3 with keep=2 and SIGKILLs itself while pruning step 1, after the
un-commit and before any file is deleted (tests/test_checkpoint_integrity.py).
"""

import json
import os
import signal
import sys

import torch

from air_magics.data import CheckpointManager, DataLoader, UCVolumeDataset


def model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def save2(rank: int, port: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    m = model()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    m(torch.ones(2, 16)).sum().backward()
    opt.step()
    dl = DataLoader(UCVolumeDataset("/Volumes/main/ck/data", shuffle=True, seed=1), batch_size=2, num_workers=1)
    got = []
    for i, b in enumerate(dl):
        got += b
        if i == 2:
            break
    mgr = CheckpointManager("/Volumes/main/ck/runs/dist", show=False)
    mgr.save(5, model=m, optimizer=opt, loader=dl)
    with open(os.environ["OUT"] + f"/rank{rank}.json", "w") as f:
        json.dump({"items": got, "weight": m[0].weight.sum().item()}, f)
    dist.destroy_process_group()


def slow_save(size_mb: int) -> None:
    mgr = CheckpointManager("/Volumes/main/ck/runs/kill", show=False)
    mgr.save(1, {"w": torch.zeros(10)})
    print("saved 1", flush=True)
    mgr.save(2, {"w": torch.randn(size_mb * 262144)})
    print("saved 2", flush=True)


def kill_prune(directory: str) -> None:
    from air_magics.checkpoints import pruning as pruning_mod

    mgr = CheckpointManager(directory, keep=2, show=False)
    mgr.save(1, {"w": torch.full((1000,), 1.0)})
    mgr.save(2, {"w": torch.full((1000,), 2.0)})
    pruning_mod._PRUNE_HOOK = lambda name: os.kill(os.getpid(), signal.SIGKILL)
    mgr.save(3, {"w": torch.full((1000,), 3.0)})
    print("prune was not reached", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "save2":
        save2(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "kill_prune":
        kill_prune(sys.argv[2])
    else:
        slow_save(int(sys.argv[2]))
