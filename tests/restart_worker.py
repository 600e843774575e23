"""A new process over the cache (tests/test_restart.py): ``python restart_worker.py FOLDER``.

Builds ``UCVolumeDataset(FOLDER)``, reads every yielded file and prints one JSON line: each file's
sha1 by name, the cache's hit/miss counters over the epoch, the validation's numbers
(``ds.validation``) and the process's ``CacheInfo`` revalidation counters; then publishes the cache
status document, as a training loop's epoch end does.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time


def main(folder: str) -> dict:
    from air_magics.cache import FileCache
    from air_magics.data import UCVolumeDataset

    before = FileCache().info()
    ds = UCVolumeDataset(folder)
    got = {}
    for p in ds:
        with open(p, "rb") as f:
            got[os.path.basename(p)] = hashlib.sha1(f.read()).hexdigest()
    v = ds.validation
    deadline = time.monotonic() + 30
    while not v.done and time.monotonic() < deadline:
        time.sleep(0.01)
    after = ds.cache.info()
    ds.cache.publish_status()
    return {
        "files": got,
        "hits": after.hits - before.hits,
        "misses": after.misses - before.misses,
        "validation": {"revalidated": v.revalidated, "requests": v.requests, "valid": v.valid, "seconds": v.seconds},
        "info": {"revalidated": after.revalidated, "revalidation_seconds": after.revalidation_seconds},
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
