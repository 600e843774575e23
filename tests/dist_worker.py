"""A rank of a 2-process gloo job for the resume tests (run as a script by tests/test_dataset.py).

argv: phase(first|resume) rank world port volume_path out_dir num_workers stop_after_batches
Writes out_dir/<phase>-rank<r>.json: the items this rank delivered and its loader state.
"""

import json
import os
import sys

import torch.distributed as dist

from air_magics.data import DataLoader, UCVolumeDataset


def main() -> None:
    phase, rank, world, port, path, out, workers, stop = sys.argv[1:9]
    rank, world, workers, stop = int(rank), int(world), int(workers), int(stop)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ds = UCVolumeDataset(path, shuffle=True, seed=5)
    dl = DataLoader(ds, batch_size=3, num_workers=workers)
    if phase == "resume":
        with open(os.path.join(out, f"first-rank{rank}.json")) as f:
            dl.load_state_dict(json.load(f)["state"])
    got = []
    for i, batch in enumerate(dl):
        got += batch
        if stop and i + 1 == stop:
            break
    state = dl.state_dict()  # a collective: every rank calls it
    with open(os.path.join(out, f"{phase}-rank{rank}.json"), "w") as f:
        json.dump({"items": got, "state": state}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
