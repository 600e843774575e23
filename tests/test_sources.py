"""cache/sources.py: eviction's question, whether a key's source still exists, answered with one
``stat`` on a local volume (the volume located once a second) and through the store elsewhere."""

import os

import pytest

from air_magics.cache.sources import SourceCheck
from air_magics.errors import VolumeNotFoundError
from air_magics.volumes import VolumeStore


def test_a_local_key_is_one_stat_and_gone_sources_say_so(air_home):
    store = VolumeStore()
    store.create("main.src.v")
    with store.open("/Volumes/main/src/v/a/b.bin", "wb") as f:
        f.write(b"x")
    check = SourceCheck(store)
    assert check("/Volumes/main/src/v/a/b.bin") and not check("/Volumes/main/src/v/a/gone.bin")
    assert check("/Volumes/main/src/v/a/gone.bin@0123abcd")  # a claimed copy: named after its content
    os.remove(store.locate("/Volumes/main/src/v/a/b.bin").path)
    assert not check("/Volumes/main/src/v/a/b.bin")  # (the located volume is reused; the file is asked)
    with pytest.raises(VolumeNotFoundError):  # eviction keeps what it cannot ask about
        check("/Volumes/main/src/nope/x.bin")


def test_an_fsspec_volume_is_asked_through_the_store(air_home):
    store = VolumeStore()
    store.register("main.mem.v", "memory://air-sources-test")
    with store.open("/Volumes/main/mem/v/x.bin", "wb") as f:
        f.write(b"y")
    check = SourceCheck(store)
    assert check("/Volumes/main/mem/v/x.bin") and not check("/Volumes/main/mem/v/y.bin")
