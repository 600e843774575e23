"""Layers point down only: the core never imports a front end, the I/O primitives import nothing of
the core, no part imports a part of a higher layer (``LAYERS``, the picture in DESIGN.md and
docs/architecture.md), and no module imports itself back through others (no import circle,
inside packages too). Checked on the source (every import statement, function-level ones too), so
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


def _pools_made(path: Path) -> list[int]:
    """Lines of *path* that construct a ``ThreadPoolExecutor`` (by name or as an attribute)."""
    return [
        n.lineno
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Call)
        and (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) == "ThreadPoolExecutor"
    ]


def test_every_thread_pool_is_made_by_the_pool_layer():
    """One pool layer: a pool's size follows from its kind (``io/pools.py``: ``job_pool`` for one
    job, ``ProcessPool`` for a process's lifetime), never from a call site of its own."""
    bad = {
        str(p.relative_to(PKG)): lines
        for p in sorted(PKG.rglob("*.py"))
        if p != PKG / "io" / "pools.py" and (lines := _pools_made(p))
    }
    assert not bad, f"thread pools made outside io/pools.py (use job_pool or ProcessPool): {bad}"


def test_the_pool_check_sees_a_pool(tmp_path):
    fake = tmp_path / "made.py"
    fake.write_text(
        "import concurrent.futures as cf\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "a = cf.ThreadPoolExecutor(2)\ndef f():\n    with ThreadPoolExecutor(4) as p:\n        pass\n"
    )
    assert _pools_made(fake) == [3, 5]


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


# -- the core's own layers and import circles --------------------------------------------------------
# Each part of the package (a top-level module or package) and its layer: a part may import parts of
# its own layer or below, never above. Lowest first; a new part must be placed here.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "io", "_version", "suggest"),  # bottom: the I/O primitives, the did-you-mean rule
    ("settings", "snapshots", "hf_datasets"),  # configuration, the values events carry, a stdlib patch
    ("events", "status"),  # the one progress channel, the status documents
    ("catalog",),  # Unity Catalog: the REST client, the embedded server (volumes resolve through it)
    ("volumes",),  # paths, store, mount, fsspec
    ("cache", "transfer", "tablefiles"),  # the file cache, the copy engine, a table's files
    # packed folders, the input pipeline, checkpoints, tables (Spark), a script on several ranks
    ("shards", "datasets", "checkpoints", "tables", "torch_launcher"),
    ("data",),  # the reference's names, for users: a face over datasets and checkpoints
    ("magics", "widgets", "listeners", "server", "charts"),  # front ends (charts: the training chart model)
    ("__init__", "demo"),  # the extension's entry point, the sample-data script
)
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package's modules it imports. ``from pkg import name`` is an import of
    ``pkg.name`` when that is a module (as a package's own modules import their siblings), else of ``pkg``."""
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                for a in node.names:
                    target = f"{name}.{a.name}" if f"{name}.{a.name}" in mods else name
                    if target in mods:
                        out.add(target)
        graph[mod] = out - {mod}
    return graph


def _part(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for each import of a part in a higher layer than the importer's."""
    return sorted(
        f"{a} -> {b}"
        for a, deps in graph.items()
        for b in deps
        if RANK.get(_part(b), -1) > RANK.get(_part(a), len(LAYERS))
    )


def test_every_part_has_a_layer():
    unplaced = sorted({_part(m) for m in _modules()} - set(RANK))
    assert not unplaced, f"place {unplaced} in LAYERS (tests/test_layers.py) and the picture in DESIGN.md"


def test_no_part_imports_a_higher_layer():
    bad = _upward(_graph(_modules()))
    assert not bad, f"imports running up the layers (LAYERS, lowest first): {bad}"


def test_no_import_circles():
    circles = _circles(_graph(_modules()))
    assert not circles, f"import circles (each set imports itself back): {circles}"


def test_the_layer_checks_see_violations():
    """The checks themselves can fail: a circle inside a package, and an arrow back up the layers."""
    graph = {
        "air_magics.shards.a": {"air_magics.shards.b"},
        "air_magics.shards.b": {"air_magics.io.x"},
        "air_magics.io.x": {"air_magics.shards.c"},
        "air_magics.shards.c": {"air_magics.shards.a"},
        "air_magics.settings": {"air_magics.volumes.path"},
        "air_magics.volumes.path": {"air_magics.settings"},
    }
    assert sorted(_circles(graph)) == [
        ["air_magics.io.x", "air_magics.shards.a", "air_magics.shards.b", "air_magics.shards.c"],
        ["air_magics.settings", "air_magics.volumes.path"],
    ]
    assert _upward(graph) == [
        "air_magics.io.x -> air_magics.shards.c",
        "air_magics.settings -> air_magics.volumes.path",
    ]
