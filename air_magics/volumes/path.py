"""``VolumePath``: a validated ``/Volumes/<catalog>/<schema>/<volume>[/<relpath>]``.

Parsing is pure (no I/O). Validation rejects what could leave the volume or confuse storage:
``..`` and ``.`` segments, empty segments, NUL bytes, and names that are not identifiers. The
symlink part of confinement needs the filesystem and lives in :mod:`air_magics.volumes.store`.

Two name rules. A *path* may name any existing catalog, schema or volume made of letters, digits,
``_`` and ``-`` (a real ``/Volumes`` mount may hold such names). A volume *created or registered*
here takes the rule of table names (:mod:`air_magics.tablefiles.names`): letters, digits and ``_``, not
starting with a digit, at most 128 characters (:meth:`VolumePath.parse_new_volume`), so one name
works for a volume and a table alike. Case is kept as written, as table names keep it; volume
paths are case-sensitive (they are folders) where Spark's table names are not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import VolumePathError

__all__ = [
    "VolumePath",
    "PREFIX",
    "is_volume_text",
    "is_name",
    "parse_namespace",
    "NEW_NAME_RULE",
    "DEFAULT_VOLUME_ENV",
]

PREFIX = "/Volumes"
DEFAULT_VOLUME_ENV = (
    "AIR_DEFAULT_VOLUME"  # a process's default volume for relative paths (the magics': %air_volume use)
)
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,254}")  # used with fullmatch: ``$`` would let "a\n" in
_NEW_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")  # the table names' rule (tablefiles/names.py)
NEW_NAME_RULE = "[A-Za-z_][A-Za-z0-9_]{0,127} (letters, digits and '_', not starting with a digit; as table names)"
_DOTTED = re.compile(r"^([^./\s]+)\.([^./\s]+)\.([^./\s]+)(/.*)?\Z", re.DOTALL)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_name(text: str) -> bool:
    """True when *text* is a valid catalog, schema or volume name (the one rule, also for listings)."""
    return _NAME.fullmatch(text) is not None


def is_volume_text(text: str) -> bool:
    """True when *text* is meant as a volume path (``/Volumes/...`` or ``c.s.v[/rel]``)."""
    text = text.strip()
    return text == PREFIX or text.startswith(PREFIX + "/") or bool(_DOTTED.match(text))


def _check_name(kind: str, name: str, text: str) -> str:
    if not _NAME.fullmatch(name):
        raise VolumePathError(
            f"invalid {kind} name {name!r} in {text!r}: use letters, digits, '_' or '-' "
            f"(e.g. /Volumes/main/default/my_volume)"
        )
    return name


def parse_namespace(text: str) -> tuple[str, ...] | None:
    """The catalog/schema a path above volume level names: ``/Volumes`` -> ``()``, ``/Volumes/c`` ->
    ``("c",)``, ``/Volumes/c/s/`` -> ``("c", "s")`` (names checked); ``None`` for anything else."""
    text = text.strip() if isinstance(text, str) else ""
    if text.rstrip("/") != PREFIX and not text.startswith(PREFIX + "/"):
        return None
    rest = text[len(PREFIX) + 1 :].rstrip("/")
    segs = rest.split("/") if rest else []
    if len(segs) > 2 or "" in segs:
        return None
    for kind, seg in zip(("catalog", "schema"), segs, strict=False):
        _check_name(kind, seg, text)
    return tuple(segs)


def _suggest_name(name: str) -> str:
    fixed = re.sub(r"[^A-Za-z0-9_]", "_", name)[:128]
    return fixed if fixed[:1].isalpha() or fixed[:1] == "_" else ("_" + fixed)[:128]


def _check_segments(parts: Iterable[str], text: str) -> tuple[str, ...]:
    out = []
    for seg in parts:
        if seg in ("", ".", ".."):
            what = "empty segment ('//')" if seg == "" else f"{seg!r} segment"
            raise VolumePathError(
                f"{what} in volume path {text!r}: volume paths must be normalised and may not "
                f"step outside their volume; write the path without it"
            )
        if _CONTROL.search(seg):
            raise VolumePathError(f"control character (NUL, newline, ...) in volume path {text!r}: remove it")
        out.append(seg)
    return tuple(out)


@dataclass(frozen=True, order=True)
class VolumePath:
    """A location inside a volume. Immutable, hashable, ordered.

    >>> p = VolumePath.parse("/Volumes/main/raw/images/train/0001.jpg")
    >>> p.volume_id, p.relpath
    ('main.raw.images', 'train/0001.jpg')
    """

    catalog: str
    schema: str
    volume: str
    parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        text = f"{PREFIX}/{self.catalog}/{self.schema}/{self.volume}"
        _check_name("catalog", self.catalog, text)
        _check_name("schema", self.schema, text)
        _check_name("volume", self.volume, text)
        object.__setattr__(self, "parts", _check_segments(self.parts, text))

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str | VolumePath, default: VolumePath | None = None) -> VolumePath:
        """Parse ``/Volumes/c/s/v[/rel]`` or ``c.s.v[/rel]``.

        A relative path (no ``/Volumes`` prefix, not dotted) is resolved against *default*, the
        volume chosen with ``%air_volume use``; without one it is an error.
        """
        if isinstance(text, VolumePath):
            return text
        if not isinstance(text, str):
            raise VolumePathError(f"volume path must be a string, got {type(text).__name__} {text!r}")
        raw = text
        if _CONTROL.search(text):  # before any pattern sees it, so "c.s.v\n" is not mistaken for a relative path
            raise VolumePathError(f"control character (NUL, newline, ...) in volume path {text!r}: remove it")
        if text == PREFIX or text.startswith(PREFIX + "/"):
            segs = text[len(PREFIX) + 1 :].rstrip("/").split("/") if text != PREFIX else []
            if len(segs) < 3 or not all(segs[:3]):
                raise VolumePathError(
                    f"{raw!r} does not name a volume: write /Volumes/<catalog>/<schema>/<volume>[/<path>]"
                )
            return cls(segs[0], segs[1], segs[2], _check_segments(segs[3:], raw))
        m = _DOTTED.match(text)
        if m:
            rest = (m.group(4) or "").strip("/")
            return cls(m.group(1), m.group(2), m.group(3), _check_segments(rest.split("/") if rest else [], raw))
        if text.startswith("/") or text.startswith("~"):
            raise VolumePathError(
                f"{raw!r} is outside /Volumes: volume paths look like /Volumes/<catalog>/<schema>/<volume>/..."
            )
        if default is None and (env := os.environ.get(DEFAULT_VOLUME_ENV, "").strip()):
            default = cls.parse_volume(env)  # a script's default volume (the ranks of %%air_torchrun get the kernel's)
        if default is None:
            raise VolumePathError(
                f"relative path {raw!r} needs a default volume: run `%air_volume use catalog.schema.volume` "
                f"(in a script: {DEFAULT_VOLUME_ENV}=catalog.schema.volume) or write the full /Volumes/... path"
            )
        rest = text.rstrip("/")
        return default.joinpath(*(rest.split("/") if rest and rest != "." else []))

    @classmethod
    def parse_volume(cls, text: str | VolumePath) -> VolumePath:
        """Parse a volume name, ``catalog.schema.volume`` or ``/Volumes/catalog/schema/volume``, nothing deeper."""
        vp = text if isinstance(text, VolumePath) else None
        if vp is None and isinstance(text, str) and is_volume_text(text):
            vp = cls.parse(text)
        if vp is None or not vp.is_root:
            raise VolumePathError(
                f"expected a volume name like catalog.schema.volume (or /Volumes/catalog/schema/volume), got {str(text)!r}"
            )
        return vp

    @classmethod
    def parse_new_volume(cls, text: str | VolumePath) -> VolumePath:
        """:meth:`parse_volume` for a volume about to be created or registered: each name must also
        follow the table names' rule (:data:`NEW_NAME_RULE`); one line names the bad part and a fix."""
        if isinstance(text, VolumePath):
            names = [text.catalog, text.schema, text.volume]
        elif not isinstance(text, str) or _CONTROL.search(text):
            names = []  # parse_volume's message says what is wrong
        elif isinstance(text, str) and text.startswith(PREFIX + "/"):
            names = text[len(PREFIX) + 1 :].rstrip("/").split("/")
        else:
            names = str(text).split(".")
        if len(names) == 3 and all(names):  # the rule first: its message names the part and a fix
            for kind, name in zip(("catalog", "schema", "volume"), names, strict=True):
                if not _NEW_NAME.fullmatch(name):
                    raise VolumePathError(
                        f"invalid {kind} name {name!r} in {'.'.join(names)!r}: a new volume's names are "
                        f"{NEW_NAME_RULE}; write e.g. {'.'.join(map(_suggest_name, names))}"
                    )
        return cls.parse_volume(text)

    # -- derived ------------------------------------------------------------------------------
    @property
    def volume_id(self) -> str:
        """``catalog.schema.volume``."""
        return f"{self.catalog}.{self.schema}.{self.volume}"

    @property
    def relpath(self) -> str:
        """Path inside the volume, ``''`` for the volume root."""
        return "/".join(self.parts)

    @property
    def root(self) -> VolumePath:
        """The volume root of this path."""
        return VolumePath(self.catalog, self.schema, self.volume)

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else self.volume

    @property
    def parent(self) -> VolumePath:
        """Parent inside the volume; the root is its own parent (a path never leaves its volume)."""
        return VolumePath(self.catalog, self.schema, self.volume, self.parts[:-1])

    def joinpath(self, *more: str) -> VolumePath:
        segs: list[str] = []
        for m in more:
            segs.extend(s for s in str(m).split("/") if s)
        return VolumePath(
            self.catalog,
            self.schema,
            self.volume,
            self.parts + _check_segments(segs, str(self) + "/" + "/".join(map(str, more))),
        )

    def __truediv__(self, other: str) -> VolumePath:
        return self.joinpath(other)

    def is_relative_to(self, other: VolumePath) -> bool:
        return self.root == other.root and self.parts[: len(other.parts)] == other.parts

    def __str__(self) -> str:
        base = f"{PREFIX}/{self.catalog}/{self.schema}/{self.volume}"
        return f"{base}/{self.relpath}" if self.parts else base
