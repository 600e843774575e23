"""``%air_volume mount`` / ``unmount``: ``/Volumes/...`` paths in plain Python (``open``,
``torch.save``) through a link to the embedded root."""

from __future__ import annotations

from typing import Any

from .command import Command

__all__ = ["MOUNT", "UNMOUNT"]


def _mount(magics: Any, args: Any) -> Any:
    from ...volumes.mount import mount

    status = mount(args.args[0] if args.args else None)
    print(f"mode: {status}")
    return status


def _unmount(magics: Any, args: Any) -> Any:
    from ...volumes.mount import unmount

    status = unmount(args.args[0] if args.args else None)
    print(f"mode: {status}")
    return status


MOUNT = Command(
    "mount",
    "[POINT]",
    (0, 1),
    "link /Volumes (or POINT, default AIR_VOLUMES_MOUNT) to the embedded root, so /Volumes/... paths work in "
    "plain Python",
    _mount,
    printed=True,
)
UNMOUNT = Command("unmount", "[POINT]", (0, 1), "remove that link (only a link mount made)", _unmount, printed=True)
