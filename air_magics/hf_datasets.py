"""``datasets.load_dataset("parquet", data_dir="volumes://...")``: make Hugging Face datasets take a
volume URL as ``data_dir``.

Why this exists: ``datasets`` (checked up to 5.2) turns a packaged builder's ``data_dir`` into a
local path before it asks fsspec anything (``Path(data_dir).expanduser().resolve()`` in
``PackagedDatasetModuleFactory.get_module``), so ``volumes://main/me/raw/x`` becomes
``<cwd>/volumes:/main/me/raw/x`` and the load fails with ``EmptyDatasetError`` (the same happens to
``s3://``: huggingface/datasets#5281). ``data_files=`` URLs are resolved through fsspec and work.

The fix is the one ``data_dir`` means by its documentation: the files under it, split by
``datasets``' own patterns (``get_data_patterns``), passed on as ``data_files`` URLs. It applies only
to a ``data_dir`` that starts with ``volumes://`` (relative ``data_files`` are then taken inside it,
as ``datasets`` means them); everything else goes to ``datasets`` untouched. ``datasets`` stays a lazy import: :func:`install` patches it if it is
loaded, else when it is first imported (a finder that waits for ``datasets.load``).
"""

from __future__ import annotations

import importlib.abc
import sys
from types import ModuleType
from typing import Any

__all__ = ["install", "patch"]

_SCHEME = "volumes://"
_TARGET = "datasets.load"
_MARK = "__air_volumes_data_dir__"


def patch(load: ModuleType) -> bool:
    """Teach ``datasets.load`` (the module) that a ``volumes://`` ``data_dir`` is a URL; idempotent.
    False when this ``datasets`` has no such seam (a later release reshaped it): left as it is."""
    cls = getattr(load, "PackagedDatasetModuleFactory", None)
    original = getattr(cls, "get_module", None)
    if original is None or getattr(original, _MARK, False):
        return original is not None

    def get_module(self: Any) -> Any:
        data_dir = getattr(self, "data_dir", None)
        if isinstance(data_dir, str) and data_dir.startswith(_SCHEME):
            import fsspec
            from datasets.data_files import get_data_patterns, sanitize_patterns
            from datasets.utils.file_utils import is_relative_path, xjoin

            base = data_dir.rstrip("/")
            fs, path = fsspec.core.url_to_fs(base)
            fs.info(path)  # a missing volume or folder: its error names the URL and the fix (not EmptyDatasetError)
            if self.data_files is None:
                patterns = get_data_patterns(base, download_config=self.download_config)
            else:  # data_files relative to data_dir, as datasets means them
                patterns = sanitize_patterns(self.data_files)
            self.data_files = {
                split: [xjoin(base, p) if is_relative_path(p) else p for p in pats] for split, pats in patterns.items()
            }
            self.data_dir = None
        return original(self)

    setattr(get_module, _MARK, True)
    get_module.__doc__ = original.__doc__
    cls.get_module = get_module
    return True


class _PatchingLoader(importlib.abc.Loader):
    """Runs the real loader of ``datasets.load``, then :func:`patch` on the module."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package...: the real loader's
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Waits for ``datasets.load`` to be imported; every other import passes through untouched."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


def install() -> None:
    """Patch ``datasets`` now if it is loaded, else when it is imported; idempotent, costs no import."""
    load = sys.modules.get(_TARGET)
    if load is not None:
        patch(load)
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
