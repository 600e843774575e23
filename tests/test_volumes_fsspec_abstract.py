"""fsspec's own conformance suite (``fsspec.tests.abstract``: copy, get, put, open, pipe) against
``volumes://``, plugged in the way s3fs and gcsfs do it: one fixtures class, one test class per
part. Run on an embedded volume (local, confined, atomic writes) and on a volume registered to
``memory://`` (delegated to that filesystem)."""

from __future__ import annotations

import posixpath
import uuid

import pytest
from fsspec.tests import abstract

from air_magics.volumes import VolumeStore
from air_magics.volumes.fsspec_fs import VolumesFileSystem


class VolumesFixtures(abstract.AbstractFixtures):
    """``fs`` is the ``volumes://`` filesystem; ``fs_path`` a fresh folder inside a test volume."""

    @pytest.fixture(params=["embedded", "memory"])
    def fs(self, request, air_home):
        store = VolumeStore()
        if request.param == "embedded":
            store.create("main.conf.v")
        else:
            store.register("main.conf.v", f"memory://conf-{uuid.uuid4().hex}")
        return VolumesFileSystem()

    @pytest.fixture
    def fs_path(self, fs):
        return f"main/conf/v/{uuid.uuid4().hex[:8]}"

    @pytest.fixture
    def fs_join(self):
        return posixpath.join


class TestVolumesCopy(abstract.AbstractCopyTests, VolumesFixtures):
    pass


class TestVolumesGet(abstract.AbstractGetTests, VolumesFixtures):
    pass


class TestVolumesPut(abstract.AbstractPutTests, VolumesFixtures):
    pass


class TestVolumesOpen(abstract.AbstractOpenTests, VolumesFixtures):
    pass


class TestVolumesPipe(abstract.AbstractPipeTests, VolumesFixtures):
    pass
