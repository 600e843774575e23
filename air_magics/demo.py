"""Sample data for the tour: ``python -m air_magics.demo`` seeds ``/Volumes/main/demo/images``.

The volume imitates an image-classification data set: many small files in class folders, the
shape that makes per-file latency dominate on remote volumes. Seeding is idempotent.
"""

from __future__ import annotations

import argparse
import random

from .volumes import VolumePath, VolumeStore

__all__ = ["seed_sample_volume", "SAMPLE_VOLUME"]

SAMPLE_VOLUME = "main.demo.images"


def seed_sample_volume(
    volume: str = SAMPLE_VOLUME, *, files: int = 600, seed: int = 0, store: VolumeStore | None = None
) -> VolumePath:
    """Create *volume* (if needed) with ``train/`` and ``val/`` class folders of small fake JPEGs."""
    store = store or VolumeStore.shared()
    root = VolumePath.parse_volume(volume)
    store.create(root, exist_ok=True)
    classes = ("cat", "dog", "bird")
    for i in range(files):
        rng = random.Random(f"{seed}:{i}")  # per file, so a re-seed skips or rewrites each file alike
        split = "val" if i % 5 == 0 else "train"
        path = root / split / classes[i % 3] / f"img_{i:05d}.jpg"
        size = rng.randrange(2_000, 24_000)
        if store.exists(path) and store.stat(path).size == size:
            continue
        with store.open(path, "wb") as f:
            f.write(b"\xff\xd8\xff\xe0" + rng.randbytes(size - 4))
    with store.open(root / "README.txt", "wb") as f:
        f.write(b"Sample volume seeded by air_magics.demo: train/ and val/ folders of small images.\n")
    return root


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--volume", default=SAMPLE_VOLUME)
    ap.add_argument("--files", type=int, default=600)
    args = ap.parse_args(argv)
    root = seed_sample_volume(args.volume, files=args.files)
    print(f"sample volume ready: {root} ({args.files} files) in {VolumeStore.shared().root}")


if __name__ == "__main__":
    main()
