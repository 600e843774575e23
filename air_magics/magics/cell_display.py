"""What a magic shows is shown where it runs: a magic line that is not its cell's last statement
displays its own result, in order.

Why: a magic's result is a return value, and IPython displays only the cell's last expression, so a
cell of several ``%air_volume`` lines (the README's tour) showed only the last one. Each magic still
returns its value (``x = %air_volume ls ...`` and ``-o VAR`` keep it); it displays it itself only when
it is a bare statement whose value IPython would drop: a top-level expression of the running cell that
is not the one IPython's display hook shows (``ast_node_interactivity``: the last one by default, every
one with ``all``). Lines inside loops, functions or assignments are left alone, as IPython leaves them.
"""

from __future__ import annotations

import ast
import inspect
import linecache
from typing import Any

__all__ = ["show_in_order"]


def show_in_order(shell: Any, value: Any) -> Any:
    """*value*, displayed now when the magic line that made it is a bare statement IPython would not
    display (see the module's doc); returned either way."""
    if value is None or shell is None:
        return value
    if _dropped_by_ipython(shell):
        from IPython.display import display

        display(value)
    return value


def _dropped_by_ipython(shell: Any) -> bool:
    """Whether the cell statement running this magic is a top-level expression whose value IPython
    discards: found from the cell's frame (globals are the user namespace, code at module level)."""
    user_ns = getattr(shell, "user_ns", None)
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals is not user_ns:
        frame = frame.f_back
    if frame is None or frame.f_code.co_name != "<module>":
        return False
    try:
        body = ast.parse("".join(linecache.getlines(frame.f_code.co_filename))).body
    except (SyntaxError, ValueError):
        return False
    line = frame.f_lineno
    index = next((i for i, node in enumerate(body) if node.lineno <= line <= (node.end_lineno or node.lineno)), None)
    if index is None or not isinstance(body[index], ast.Expr):
        return False
    mode = getattr(shell, "ast_node_interactivity", "last_expr")
    if mode == "all":
        return False
    if mode == "none":
        return True
    last_expr = max((i for i, node in enumerate(body) if isinstance(node, ast.Expr)), default=None)
    shown_last = index == len(body) - 1 if mode in ("last_expr", "last_expr_or_assign") else index == last_expr
    return not shown_last
