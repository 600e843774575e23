"""Is there a front end that can render ipywidgets, and which of a view's two forms to show."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

W = TypeVar("W")
T = TypeVar("T")


def has_widget_frontend() -> bool:
    """True inside a Jupyter kernel (ipykernel), where widget views can render."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    ip = get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell" and getattr(ip, "kernel", None) is not None


def pick_view(widget: bool | None, make_widget: Callable[[], W], make_text: Callable[[], T]) -> W | T:
    """The widget form of a view where a widget front end is (*widget* True or False forces the
    choice), else the text form; without ipywidgets installed, the text form too."""
    if has_widget_frontend() if widget is None else widget:
        try:
            return make_widget()
        except ImportError:  # ipywidgets missing: fall back to text
            pass
    return make_text()
