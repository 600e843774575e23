"""``ProcessFS``: the filesystem of a volume registered to object storage, one instance per process.

Why: every file of a listing carries its volume's filesystem (``Location.fs``), and a DataLoader
forks its workers after the listing is made. An async fsspec backend (s3fs, gcsfs, adlfs) is bound
to its process's event loop and connection pool: used in a forked child it raises ``RuntimeError:
This class is not fork-safe`` on the first read. A ``ProcessFS`` stands where that instance stood
(the same attributes and methods, passed through) and makes the backend's instance in the process
that uses it: anew in a forked child (:mod:`air_magics.io.forksafe`), and in a spawned one, which
gets the filesystem's recipe (class, arguments, storage options) instead of its state.

Why also here: what the listing already knows is not asked again. A whole-object read is one GET:
s3fs asks the object's size first (a HEAD) unless its listing cache knows it, to split large
objects into concurrent ranges; a fresh instance per process never knows it. Large files do not
come this way (the copy engine streams files over 64 MiB through ``open``), so the read passes
``max_concurrency=1`` and the GET alone answers. The connection pool is sized to the concurrency of
remote I/O (``io.pools.threads("remote-io")``), not s3fs's 10, unless the registration set one.

An access refusal of the store (a wrong secret, a missing permission: ``PermissionError: Forbidden``
from the backend) becomes a :class:`~air_magics.errors.StorageAccessError` naming the URL and the fix.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from ..errors import RegistryError, StorageAccessError, VolumeNotFoundError
from ..io.forksafe import ForkSafeLock, renew_after_fork
from ..io.pools import threads
from .location import Location, fs_mtime
from .path import VolumePath
from .walk import Entry

__all__ = ["ProcessFS", "fs_entries", "open_url", "process_fs", "pool_options", "access_error", "is_object_store"]

_S3 = frozenset({"s3", "s3a"})
_ONE_REQUEST: dict[str, dict[str, Any]] = {"s3": {"max_concurrency": 1}, "s3a": {"max_concurrency": 1}}
_SHARED: dict[str, ProcessFS] = {}  # token of (class, args, options) -> the process's one ProcessFS for it
_LOCK = ForkSafeLock()
_ENV_PREFIXES = ("AWS_", "FSSPEC_", "GOOGLE_", "GCS", "AZURE_")
_URLS: dict[str, tuple[Any, str]] = {}  # token of (url, options, credentials environment) -> open_url's answer
# a forked child's copies of its parent's instances, never released there: their finalizers would close
# the parent's connections from the child, on a loop that does not run in it (errors at the child's exit)
_INHERITED: list[Any] = []


def _protocols(cls: type) -> tuple[str, ...]:
    p = getattr(cls, "protocol", ())
    return (p,) if isinstance(p, str) else tuple(p)


def is_object_store(protocol: str) -> bool:
    """Whether volumes on *protocol* are object storage (everything but the local filesystem)."""
    return protocol not in ("file", "local")


def pool_options(protocol: str, options: dict[str, Any]) -> dict[str, Any]:
    """*options* for *protocol*'s backend with a connection pool sized to the concurrency of remote
    I/O where the backend has one to size (s3: ``config_kwargs.max_pool_connections``) and the
    caller did not size it."""
    if protocol not in _S3:
        return options
    config = dict(options.get("config_kwargs") or {})
    config.setdefault("max_pool_connections", threads("remote-io"))
    return {**options, "config_kwargs": config}


def access_error(exc: PermissionError, url: str) -> StorageAccessError:
    """The one-line error for the store refusing *url* (the backend's message kept, the fix named)."""
    if isinstance(exc, StorageAccessError):
        return exc
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    code = getattr(cause, "response", {}).get("Error", {}).get("Code") if hasattr(cause, "response") else None
    why = f"{code}: {exc}" if code and code not in str(exc) else str(exc) or type(exc).__name__
    return StorageAccessError(
        f"{url}: access refused by the storage ({why}); check the credentials it is read with "
        f"(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or the volume's --profile) and that they may read "
        f"this bucket, then register the volume again with `%air_volume register`"
    )


class ProcessFS:
    """Stands for one fsspec filesystem (*fs*, made in this process) and makes its twin in every
    other process that uses it; reads of whole objects are one request. Get one with
    :func:`process_fs` (one per filesystem per process, so identity comparisons hold)."""

    _OWN = frozenset({"_cls", "_args", "_options", "_token", "_pid", "_fs", "_lock", "_whole", "protocol"})

    def __init__(self, cls: type, args: tuple[Any, ...], options: dict[str, Any], token: str, fs: Any = None) -> None:
        self._cls, self._args, self._options, self._token = cls, args, options, token
        self._pid, self._fs = os.getpid(), fs  # None: made on first use
        self._lock = ForkSafeLock()
        self.protocol = getattr(cls, "protocol", ())
        self._whole = next((_ONE_REQUEST[p] for p in _protocols(cls) if p in _ONE_REQUEST), {})
        renew_after_fork(self)

    @property
    def instance(self) -> Any:
        """This process's backend instance (made on first use in a process)."""
        fs = self._fs
        if fs is not None and self._pid == os.getpid():
            return fs
        with self._lock:
            if self._fs is None or self._pid != os.getpid():
                self._fs = self._cls(*self._args, **self._options)  # (fsspec's instance cache is per process)
                self._pid = os.getpid()
            return self._fs

    def after_fork(self) -> None:
        if self._fs is not None:
            _INHERITED.append(self._fs)
        self._fs = None
        self._lock = ForkSafeLock()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ProcessFS._OWN:  # (not set yet: no recursion through instance)
            raise AttributeError(name)
        value = getattr(self.instance, name)
        if not callable(value) or name.startswith("_"):
            return value
        return self._refusals_named(value)

    def _refusals_named(self, method: Any) -> Any:
        """*method*, with the store's refusal (``PermissionError: Forbidden``) as one line naming the URL
        and the fix (:func:`access_error`), for every call a volume makes (exists, ls, find, ...)."""

        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except PermissionError as exc:
                if isinstance(exc, StorageAccessError):
                    raise
                where = args[0] if args and isinstance(args[0], str) else ""
                raise access_error(exc, self.url(where)) from None

        return call

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _revive, (self._cls, self._args, self._options, self._token)

    def __repr__(self) -> str:
        return f"ProcessFS({self._cls.__name__}, pid={os.getpid()})"

    def url(self, path: str) -> str:
        return f"{_protocols(self._cls)[0]}://{path.lstrip('/')}"

    def reader_options(self) -> dict[str, str]:
        """What deltalake needs to read this store's objects itself (endpoint, credentials)."""
        from .store_options import object_store_options

        return object_store_options(_protocols(self._cls)[0], self._options)

    # -- reads that carry what the listing knows ---------------------------------------------------
    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        """The object's bytes (a range: *start*, *end*); a whole object in one request."""
        if start is None and end is None:
            kwargs = {**self._whole, **kwargs}
        try:
            return self.instance.cat_file(path, start=start, end=end, **kwargs)
        except PermissionError as exc:
            raise access_error(exc, self.url(path)) from None

    def open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        try:
            return self.instance.open(path, mode, **kwargs)
        except PermissionError as exc:
            raise access_error(exc, self.url(path)) from None

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            return self.instance.info(path, **kwargs)
        except PermissionError as exc:
            raise access_error(exc, self.url(path)) from None


def _credential_env() -> tuple[tuple[str, str], ...]:
    """The environment a backend reads its endpoint and credentials from (the AWS chain, Google's and
    Azure's, fsspec's own): a filesystem made under other values is another filesystem."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)))


def process_fs(fs: Any) -> ProcessFS:
    """The process's :class:`ProcessFS` for the filesystem *fs* (made now, or the one made before for
    an equal filesystem under the same credentials environment)."""
    from fsspec.utils import tokenize

    cls = type(fs)
    args, options = tuple(fs.storage_args), dict(fs.storage_options)
    token = tokenize(cls.__module__, cls.__qualname__, args, options, _credential_env())
    with _LOCK:
        found = _SHARED.get(token)
        if found is None:
            found = _SHARED[token] = ProcessFS(cls, args, options, token, fs)
        return found


def _revive(cls: type, args: tuple[Any, ...], options: dict[str, Any], token: str) -> ProcessFS:
    """A pickled ProcessFS in another process: that process's own one (its instance made on first use)."""
    with _LOCK:
        found = _SHARED.get(token)
        if found is None:
            found = _SHARED[token] = ProcessFS(cls, args, options, token)
        return found


def open_url(url: str, options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """``(filesystem, path)`` of a registered volume's *url* with its storage *options*: the local
    filesystem as fsspec gives it, any other one as this process's :class:`ProcessFS` with its
    connection pool sized (see :func:`pool_options`)."""
    try:
        from fsspec.core import split_protocol, url_to_fs
    except ImportError:  # pragma: no cover - fsspec is a core dependency
        raise RegistryError("fsspec is required for registered volumes: pip install fsspec") from None
    from fsspec.utils import tokenize

    protocol = (split_protocol(url)[0] or "file").lower()
    if not is_object_store(protocol):
        return _url_to_fs(url_to_fs, url, options or {})
    key = tokenize(url, options, _credential_env())
    found = _URLS.get(key)
    if found is not None:
        return found
    # not fsspec's cached instance: one made for other credentials (the environment changed) may be there
    fs, path = _url_to_fs(url_to_fs, url, {**pool_options(protocol, dict(options or {})), "skip_instance_cache": True})
    found = (fs, path) if "file" in _protocols(type(fs)) else (process_fs(fs), path)
    if len(_URLS) > 64:  # (the environment changed many times: tests)
        _URLS.clear()
    _URLS[key] = found
    return found


def _url_to_fs(url_to_fs: Any, url: str, options: dict[str, Any]) -> tuple[Any, str]:
    try:
        return url_to_fs(url, **options)
    except (ImportError, ValueError, TypeError) as exc:
        raise RegistryError(
            f"cannot open storage URL {url!r}: {exc}. Install the fsspec backend for its scheme "
            f"(s3fs for s3://, gcsfs for gs://, adlfs for abfs://)"
        ) from None


def fs_entries(loc: Location, vp: VolumePath, *, recursive: bool, with_dirs: bool) -> list[Entry]:
    """The listing of *vp* (at *loc* on an fsspec filesystem) relative to it, sorted; a file lists as
    one entry with ``rel == ""``. The listing comes first (one ListObjects per 1,000 keys on S3): only
    an empty one asks whether the path exists at all (an object store has no folders to ask about,
    and an identity that may list may not be allowed a HEAD)."""
    fs, base = loc.fs, loc.path.rstrip("/")
    missing = VolumeNotFoundError(f"{str(vp)!r} does not exist; check the path with `%air_volume ls {vp.parent}`")
    try:
        listing = (
            fs.find(base, withdirs=with_dirs, detail=True)
            if recursive
            else {i["name"]: i for i in fs.ls(base, detail=True)}
        )
        if not listing and vp.parts and not fs.exists(base):
            raise missing
    except FileNotFoundError:
        if not vp.parts:  # a registered volume's root: an empty prefix (an object store has no folders)
            return []
        raise missing from None
    except PermissionError as exc:
        raise access_error(exc, str(loc)) from None
    strip = base.lstrip("/")
    out = []
    for name, info in listing.items():
        name = name.lstrip("/").rstrip("/")
        is_dir = info.get("type") == "directory"
        if name == strip:  # the path itself: a file (a folder does not list itself)
            if not is_dir:
                return [Entry("", int(info.get("size") or 0), fs_mtime(info))]
            continue
        rel = name[len(strip) + 1 :]
        if not rel or (is_dir and not with_dirs):
            continue
        out.append(Entry(rel, int(info.get("size") or 0), fs_mtime(info), is_dir))
    out.sort(key=lambda e: e.rel)
    return out
