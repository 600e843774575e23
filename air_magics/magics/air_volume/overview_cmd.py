"""``%air_volume`` with no command: where volumes resolve, the mode plain Python sees, the volumes there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...volumes.summary import VolumesOverview
from .._state import store
from .command import Command

__all__ = ["OVERVIEW"]


def _overview(magics: Any, args: Any) -> Any:
    from ...volumes.mount import mount_status

    st = store(fresh=True)  # where volumes resolve, looked at now (a mount may have appeared)
    return Overview(
        str(st.root),
        st.kind,
        str(st.registry.file),
        magics.default_volume or None,
        st.volumes(),
        st.why,
        mode=str(mount_status()),
    )


@dataclass
class Overview(VolumesOverview):
    """The overview plus the mode plain Python sees (real mount, embedded via symlink, store only)."""

    mode: str = ""

    def __repr__(self) -> str:
        head, _, rest = super().__repr__().partition("\n")
        return f"{head}\nmode: {self.mode}\n{rest}"

    def _repr_html_(self) -> str:
        from html import escape

        return super()._repr_html_().replace("<table>", f"<p>mode: {escape(self.mode)}</p><table>", 1)


OVERVIEW = Command("", "", (0, 0), "where volumes resolve, and the volumes there", _overview)
