"""Layers point down only: the core never imports a front end, and the I/O primitives import
nothing of the core. Checked on the source (every import statement, function-level ones too), so
a lazy import inside a function cannot hide a violation."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "air_magics"
FRONT_ENDS = ("magics", "widgets", "server")
FORBIDDEN_IN_CORE = ("IPython", "ipywidgets", "tornado", "jupyter_server")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, mod: str | None = None) -> set[str]:
    """Absolute names of every module *path* (module *mod*) imports (relative imports resolved)."""
    mod = mod or _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)  # `from . import widgets`
    return out


def _core_modules() -> list[Path]:
    """Every module but the front ends and the package's own ``__init__`` (the extension's entry
    point, which hands over to the magics)."""
    return sorted(
        p for p in PKG.rglob("*.py") if p.relative_to(PKG).parts[0] not in FRONT_ENDS and p != PKG / "__init__.py"
    )


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_core_never_imports_a_front_end(path):
    bad = sorted(
        i
        for i in _imports(path)
        if i.split(".")[0] in FORBIDDEN_IN_CORE
        or any(i == f"air_magics.{f}" or i.startswith(f"air_magics.{f}.") for f in FRONT_ENDS)
    )
    assert not bad, f"{path.relative_to(PKG)} (core) imports front end(s) {bad}: report through events instead"


@pytest.mark.parametrize("path", sorted((PKG / "io").glob("*.py")), ids=lambda p: p.name)
def test_io_primitives_import_nothing_of_the_core(path):
    bad = sorted(
        i
        for i in _imports(path)
        if i.startswith("air_magics.") and not (i.startswith("air_magics.io") or i.startswith("air_magics.errors"))
    )
    assert not bad, f"io/{path.name} imports {bad}: the I/O primitives sit at the bottom"


def test_the_checker_sees_a_violation(tmp_path):
    """The check itself can fail: a lazy front-end import inside a function is found."""
    fake = tmp_path / "probe.py"
    fake.write_text("def f():\n    from ..widgets import x\n    from .. import magics\n    import IPython\n")
    found = _imports(fake, "air_magics.data.probe")
    assert {"air_magics.widgets", "air_magics.magics", "IPython"} <= found


@pytest.mark.parametrize("name", ["events.py", "snapshots.py"])
def test_events_sit_at_the_bottom(name):
    """Every layer emits events, so the event module and the values it carries import only the
    standard library, errors and the I/O primitives."""
    bad = sorted(
        i
        for i in _imports(PKG / name)
        if i.startswith("air_magics.")
        and not any(
            i == m or i.startswith(m + ".") for m in ("air_magics.errors", "air_magics.io", "air_magics.snapshots")
        )
    )
    assert not bad, f"{name} imports {bad}: events must stay below every layer that emits them"


def test_core_listeners_stay_out_of_the_front_ends():
    """Listeners in the core (status documents, logs, tqdm, mlflow) never import IPython or widgets."""
    for path in sorted((PKG / "listeners").glob("*.py")):
        bad = sorted(
            i for i in _imports(path) if i.split(".")[0] in FORBIDDEN_IN_CORE or i.startswith("air_magics.widgets")
        )
        assert not bad, f"listeners/{path.name} imports {bad}"
