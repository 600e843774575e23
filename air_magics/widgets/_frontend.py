"""Is there a front end that can render ipywidgets?"""

from __future__ import annotations


def has_widget_frontend() -> bool:
    """True inside a Jupyter kernel (ipykernel), where widget views can render."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    ip = get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell" and getattr(ip, "kernel", None) is not None
