"""UCDataset: real Parquet files (pyarrow), a real volume, a real embedded Spark table, real DataLoader workers."""

from __future__ import annotations

import os
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as hst

from air_magics.data import DataLoader, UCDataset
from air_magics.datasets.epoch_order import EpochState, Grid, with_progress
from air_magics.datasets.row_plan import Piece, remaining_after, split, stream_left, stream_plan, total
from air_magics.datasets.table_dataset import FilterError, TableSchemaError
from air_magics.errors import AirError, DatasetError


def write_folder(d, files=3, rows=1000, row_group=300, extra=False):
    """*files* Parquet files of *rows* rows each (ids 0.. in order), Spark-style side files beside them."""
    os.makedirs(d, exist_ok=True)
    for i in range(files):
        ids = np.arange(i * rows, (i + 1) * rows)
        cols = {
            "id": ids,
            "x": ids * 0.5,
            "s": [f"s{j % 7}" for j in ids],
            "flag": ids % 3 == 0,
            "opt": pa.array([None if j % 5 == 0 else int(j) for j in ids], pa.int32()),
        }
        if extra:
            cols["more"] = ids
        pq.write_table(pa.table(cols), os.path.join(d, f"part-{i:05d}.parquet"), row_group_size=row_group)
    open(os.path.join(d, "_SUCCESS"), "w").close()
    open(os.path.join(d, ".part-00000.parquet.crc"), "w").close()
    return str(d)


def ids_of(batches):
    return [int(i) for b in batches for i in b["id"]]


# -- the plan (pure) ---------------------------------------------------------------------------------
@pytest.mark.parametrize("unit_rows", [[1000], [300, 300, 300, 100], [7, 0, 5], [3] * 40])
@pytest.mark.parametrize("streams", [1, 2, 3, 4, 8])
def test_split_is_even_and_exact(unit_rows, streams):
    pieces = [Piece(u, 0, r) for u, r in enumerate(unit_rows) if r]
    slices = split(pieces, streams)
    sizes = [total(s) for s in slices]
    assert max(sizes) - min(sizes) <= 1
    if sum(unit_rows) >= streams:
        assert min(sizes) >= 1  # no stream gets nothing
    rows = [(p.unit, r) for s in slices for p in s for r in range(p.lo, p.hi)]
    assert sorted(rows) == [(u, r) for u, n in enumerate(unit_rows) for r in range(n)]  # each row once


def _run_stream(plan, window, shuffle, take):
    """The rows (unit, row) a stream delivers, in order, like the reader does (window permutations)."""
    from air_magics.datasets.row_plan import take_range, window_perm

    n = total(plan.pieces)
    out = []
    w = plan.skip // window
    drop = plan.skip % window
    while w * window < n:
        a, b = w * window, min(n, (w + 1) * window)
        rows = [(p.unit, r) for p in take_range(plan.pieces, a, b) for r in range(p.lo, p.hi)]
        rows = [rows[i] for i in window_perm(b - a, shuffle=shuffle, key=(*plan.key, w))][drop:]
        drop = 0
        out += rows
        w += 1
    return out[:take]


@pytest.mark.parametrize("shuffle", [False, True])
def test_resume_on_other_grids_delivers_every_row_once(shuffle):
    unit_rows, window = [50, 70, 0, 33, 90], 16
    rng = random.Random(1)
    st = EpochState(seed=3, epoch=1, n=sum(unit_rows), shuffle=shuffle)
    seen = []
    for grid in (Grid(2, 2), Grid(1, 3), Grid(3, 1), Grid(1, 1)):
        counts = []
        for s in range(grid.streams):
            plan = stream_plan(st, unit_rows, window, grid, s)
            take = plan.rows if grid == Grid(1, 1) else rng.randint(0, plan.rows)
            seen += _run_stream(plan, window, shuffle, take)
            counts.append(take)
        st = EpochState(st.seed, st.epoch, st.n, st.shuffle, "", st.segments + [(grid, counts)])
    assert sorted(seen) == [(u, r) for u, n in enumerate(unit_rows) for r in range(n)]
    assert remaining_after(st, unit_rows, window) == []


@settings(max_examples=60, deadline=None)
@given(
    unit_rows=hst.lists(hst.integers(0, 40), min_size=1, max_size=6),
    window=hst.integers(1, 17),
    shuffle=hst.booleans(),
    runs=hst.lists(hst.tuples(hst.integers(1, 3), hst.integers(1, 3), hst.integers(0, 2**16)), max_size=4),
)
def test_any_chain_of_partial_runs_delivers_every_row_once(unit_rows, window, shuffle, runs):
    st = EpochState(seed=7, epoch=0, n=sum(unit_rows), shuffle=shuffle)
    seen = []
    for world, workers, salt in runs:
        grid, counts = Grid(world, workers), []
        for s in range(grid.streams):
            plan = stream_plan(st, unit_rows, window, grid, s)
            take = random.Random(salt + s).randint(0, plan.rows)
            seen += _run_stream(plan, window, shuffle, take)
            counts.append(take)
        # a run on the grid of the last segment adds to it, as the loader's state does
        st = with_progress(st, grid, dict(enumerate(counts)))
    for s in range(3):  # finish on a 1 x 3 grid
        plan = stream_plan(st, unit_rows, window, Grid(1, 3), s)
        seen += _run_stream(plan, window, shuffle, plan.rows)
    assert sorted(seen) == [(u, r) for u, n in enumerate(unit_rows) for r in range(n)]


def test_stream_left_refuses_foreign_counts():
    with pytest.raises(AirError, match="delivered 11 rows but it only had 10"):
        stream_left([Piece(0, 0, 10)], 11, window=4, shuffle=False, key=(0,))


# -- folders of Parquet files ------------------------------------------------------------------------
def test_batches_have_tensors_and_lists(tmp_path):
    ds = UCDataset(write_folder(tmp_path / "t"), batch_size=256)
    assert len(ds) == 3000 and len(ds.units) == 12
    batches = list(ds)
    b = batches[0]
    assert set(b) == {"id", "x", "s", "flag", "opt"}
    assert b["id"].dtype == torch.int64 and b["x"].dtype == torch.float64 and b["flag"].dtype == torch.bool
    assert isinstance(b["s"], list) and b["s"][:2] == ["s0", "s1"]
    assert b["opt"].dtype == torch.float64 and torch.isnan(b["opt"][0]) and b["opt"][1] == 1  # nulls -> NaN
    assert [len(x["id"]) for x in batches] == [256] * 11 + [3000 - 11 * 256]
    assert ids_of(batches) == list(range(3000))  # unshuffled: table order


def test_columns_and_filter_are_pushed_down(tmp_path):
    d = write_folder(tmp_path / "t")
    ds = UCDataset(d, columns=["id", "s"], filter="flag AND id BETWEEN 100 AND 2500 AND s IN ('s1', 's2')")
    assert ds._read_cols == ["id", "s", "flag"]  # only what is yielded or filtered on is read
    batches = list(ds)
    assert set(batches[0]) == {"id", "s"}
    want = [i for i in range(100, 2501) if i % 3 == 0 and f"s{i % 7}" in ("s1", "s2")]
    assert ids_of(batches) == want and len(ds) == len(want)
    expr = UCDataset(d, filter=(pc.field("x") > 1000) & ~pc.field("opt").is_null())
    assert ids_of(expr) == [i for i in range(2001, 3000) if i % 5]


def test_bad_columns_and_filters_are_refused(tmp_path):
    d = write_folder(tmp_path / "t")
    with pytest.raises(DatasetError, match=r"\['idd'\].*did you mean 'id'"):
        UCDataset(d, columns=["idd", "x"])
    with pytest.raises(FilterError, match="'flga'.*did you mean 'flag'"):
        UCDataset(d, filter="flga = true")
    for bad in ("id > 1; DROP TABLE t", "upper(s) = 'S1'", "s = 1", "id >"):
        with pytest.raises(FilterError) as e:
            UCDataset(d, filter=bad)
        assert isinstance(e.value, (AirError, ValueError)) and "\n" not in str(e.value)
    with pytest.raises(DatasetError, match="not a folder"):
        UCDataset(str(tmp_path / "missing/"))
    with pytest.raises(DatasetError, match="not in the embedded store"):
        UCDataset("main.nosuch.table")


def _nulls_and_nans(d):
    """id 0..5 with NULL ids, NULL and NaN floats: the rows where SQL's three-valued logic and Spark's
    NaN rules differ from plain Python/IEEE comparisons."""
    os.makedirs(d, exist_ok=True)
    nan = float("nan")
    pq.write_table(
        pa.table(
            {
                "k": pa.array(range(6), pa.int64()),
                "id": pa.array([1, 2, None, 3, None, 4], pa.int64()),
                "x": pa.array([1.0, nan, None, 5.0, nan, 2.0]),
                "y": pa.array([nan, nan, 1.0, None, 2.0, 2.0]),
                "s": pa.array(["a", None, "it's", "b", "c", None]),
            }
        ),
        os.path.join(d, "part-0.parquet"),
    )
    return str(d)


# Spark's WHERE (three-valued logic: only TRUE keeps a row; NaN = NaN, NaN above every number)
SPARK_WHERE = {
    "id IN (1, NULL)": [0],
    "NOT (id IN (1, 2))": [3, 5],
    "id NOT IN (1, NULL)": [],
    "NOT (id IN (NULL))": [],
    "id IN (1.5, 2)": [1],
    "s IN ('a', NULL)": [0],
    "NOT (s IN ('a'))": [2, 3, 4],
    "id = NULL": [],
    "NOT (id = NULL)": [],
    "id != NULL OR k = 5": [5],
    "id BETWEEN 2 AND NULL": [],
    "NOT (id BETWEEN 2 AND 3)": [0, 5],
    "x > 2": [1, 3, 4],
    "x < 2": [0],
    "NOT (x <= 3)": [1, 3, 4],
    "x != 1": [1, 3, 4, 5],
    "x = y": [1, 5],
    "x >= y": [1, 4, 5],
    "x < y": [0],
    "x BETWEEN 0 AND 10": [0, 3, 5],
    "x IN (1, 5)": [0, 3],
    "NOT (x IN (1, 5))": [1, 4, 5],
    "x IS NULL OR id IS NULL": [2, 4],
    "s = 'it\\'s'": [2],
    "s = 'it''s'": [2],  # a doubled quote inside a string: Spark's "it's"
    "s = 'it' 's'": [],  # adjacent strings: Spark's "its"
    "s IN ('i' 't''s', 'b')": [2, 3],
}


@pytest.mark.parametrize("flt", list(SPARK_WHERE))
def test_filters_keep_the_rows_spark_keeps(tmp_path, flt):
    """pyarrow's is_in matches NULL to NULL and compares NaN as IEEE does: Spark's WHERE does neither."""
    ds = UCDataset(_nulls_and_nans(tmp_path / "t"), filter=flt)
    assert sorted(int(k) for b in ds for k in b["k"]) == SPARK_WHERE[flt] and len(ds) == len(SPARK_WHERE[flt])


def _spark_value(cond, row):
    """Spark's value of condition *cond* (a small tree) on *row*: True, False or None (NULL),
    with three-valued logic and Spark's NaN ordering (NaN = NaN, NaN above every number)."""
    import math

    def val(v):
        return row[v[1]] if v[0] == "col" else v[1]

    def key(v):
        return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)

    def cmp(op, a, b):
        if a is None or b is None:
            return None
        a, b = key(a), key(b)
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]

    def kleene(vals, stop):
        return stop if stop in vals else (None if None in vals else not stop)

    kind = cond[0]
    if kind == "cmp":
        return cmp(cond[1], val(cond[2]), val(cond[3]))
    if kind == "in":
        x = val(cond[1])
        return None if x is None else kleene([cmp("=", x, v) for v in cond[2]], True)
    if kind == "between":
        return kleene([cmp(">=", val(cond[1]), cond[2]), cmp("<=", val(cond[1]), cond[3])], False)
    if kind == "isnull":
        return val(cond[1]) is None
    if kind == "not":
        v = _spark_value(cond[1], row)
        return None if v is None else not v
    return kleene([_spark_value(c, row) for c in cond[1:]], kind == "or")


def _sql(cond):
    def lit(v):
        return "NULL" if v is None else repr(v)

    def val(v):
        return v[1] if v[0] == "col" else lit(v[1])

    kind = cond[0]
    if kind == "cmp":
        return f"{val(cond[2])} {cond[1]} {val(cond[3])}"
    if kind == "in":
        return f"{val(cond[1])} IN ({', '.join(lit(v) for v in cond[2])})"
    if kind == "between":
        return f"{val(cond[1])} BETWEEN {lit(cond[2])} AND {lit(cond[3])}"
    if kind == "isnull":
        return f"{val(cond[1])} IS NULL"
    if kind == "not":
        return f"NOT ({_sql(cond[1])})"
    return "(" + f") {kind.upper()} (".join(_sql(c) for c in cond[1:]) + ")"


_LITS = hst.sampled_from([-1, 0, 1, 2, 2.5, None])
_COL = hst.sampled_from(["id", "x", "y"]).map(lambda c: ("col", c))
_SIDE = _COL | _LITS.map(lambda v: ("lit", v))
_LEAF = hst.one_of(
    hst.tuples(hst.just("cmp"), hst.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _COL, _SIDE),
    hst.tuples(hst.just("in"), _COL, hst.lists(_LITS, min_size=1, max_size=4)),
    hst.tuples(hst.just("between"), _COL, _LITS, _LITS),
    hst.tuples(hst.just("isnull"), _COL),
)
_COND = hst.recursive(
    _LEAF,
    lambda inner: hst.one_of(
        hst.tuples(hst.just("not"), inner), hst.tuples(hst.sampled_from(["and", "or"]), inner, inner)
    ),
    max_leaves=6,
)


def test_random_filters_keep_the_rows_spark_would(tmp_path):
    """Property: for any condition over NULLs and NaNs, UCDataset keeps the rows where Spark's value is TRUE."""
    rng = random.Random(7)
    nan = float("nan")
    n = 60
    data = {
        "k": list(range(n)),
        "id": [rng.choice([None, -1, 0, 1, 2, 3]) for _ in range(n)],
        "x": [rng.choice([None, nan, -1.0, 0.0, 1.0, 2.0, 2.5]) for _ in range(n)],
        "y": [rng.choice([None, nan, 0.0, 1.0, 2.5]) for _ in range(n)],
    }
    d = tmp_path / "t"
    d.mkdir()
    pq.write_table(
        pa.table(
            data, schema=pa.schema([("k", pa.int64()), ("id", pa.int64()), ("x", pa.float64()), ("y", pa.float64())])
        ),
        str(d / "part-0.parquet"),
        row_group_size=16,  # several row groups: their statistics are used to count matches
    )
    rows = [{c: data[c][i] for c in data} for i in range(n)]

    @settings(max_examples=200, deadline=None)
    @given(cond=_COND)
    def check(cond):
        want = [r["k"] for r in rows if _spark_value(cond, r) is True]
        ds = UCDataset(str(d), columns=["k"], filter=_sql(cond), batch_size=64)
        assert (_sql(cond), sorted(int(k) for b in ds for k in b["k"])) == (_sql(cond), want)
        assert len(ds) == len(want)

    check()


@pytest.mark.parametrize(
    "flt,says",
    [
        (" OR ".join(f"id = {i}" for i in range(3000)), None),  # long, flat: fine (a balanced tree)
        (" AND ".join(f"NOT (id = {i})" for i in range(3000)), None),
        ("(" * 3000 + "id = 1" + ")" * 3000, "nested more than"),
        ("NOT " * 3000 + "flag", "nested more than"),
        ("id = " + "- " * 3000 + "1", "nested more than"),
        ("id = 99999999999999999999999", "outside the 64-bit integer range"),
        ("id IN (1, 99999999999999999999999)", "outside the 64-bit integer range"),
        ("x > 1e400", "outside the double range"),
        ("id = 1 /* not closed", "unclosed quote, backtick or comment"),
        ("s = 'not closed", "unclosed quote, backtick or comment"),
        ("`id = 1", "unclosed quote, backtick or comment"),
        ("id >", r"does not parse near 'id >' \(column 4\)"),
        ("id = = 1", "does not parse near 'id = ='"),
    ],
)
def test_hostile_filters_are_refused_in_one_line(tmp_path, flt, says):
    d = write_folder(tmp_path / "t", files=1, rows=4000, row_group=4000)
    if says is None:
        assert len(UCDataset(d, filter=flt)) in (3000, 1000)
        return
    with pytest.raises(FilterError, match=says) as e:
        UCDataset(d, filter=flt)
    msg = str(e.value)
    assert msg.startswith("filter ") and "\n" not in msg and len(msg) < 400
    for internal in ("sqlglot", "expressions", "<class", "Required keyword", "\x1b", "Error tokenizing"):
        assert internal not in msg


def _spark_overwrite(d, **cols):
    """What Spark's overwrite does to a table folder: old part files gone, new ones (new names) in."""
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    pq.write_table(pa.table(cols), os.path.join(d, "part-00000-new.snappy.parquet"))


def test_a_table_overwritten_between_epochs_is_refused_in_one_line(tmp_path):
    d = write_folder(tmp_path / "t", files=2, rows=500, row_group=200)
    ds = UCDataset(d, columns=["id", "x"], batch_size=100)
    assert len(ids_of(ds)) == 1000
    _spark_overwrite(d, id=np.arange(10), x=np.arange(10).astype(str))  # x: double -> string
    ds.set_epoch(1)
    with pytest.raises(TableSchemaError, match=r"schema of .* changed since this UCDataset was made.*x: string") as e:
        list(ds)
    assert "\n" not in str(e.value) and "build a new UCDataset" in str(e.value)
    assert len(UCDataset(d)) == 10  # a new dataset reads the new table

    same = write_folder(tmp_path / "u", files=2, rows=500, row_group=200)
    ds = UCDataset(same, batch_size=100)
    list(ds)
    write_folder(tmp_path / "u", files=1, rows=300, row_group=100)  # same schema, part-00000 rewritten in place
    os.remove(os.path.join(same, "part-00001.parquet"))
    with pytest.raises(DatasetError, match=r"data of .* changed since this UCDataset was made"):
        list(ds)


def test_a_table_overwritten_mid_epoch_is_refused_in_one_line(tmp_path):
    d = write_folder(tmp_path / "t", files=2, rows=500, row_group=100)
    it = iter(UCDataset(d, batch_size=50, window=100))  # windows read as the epoch goes
    next(it)
    _spark_overwrite(d, id=np.arange(10))
    with pytest.raises(TableSchemaError, match="schema of .* changed") as e:
        list(it)
    assert e.value.__cause__ is None and e.value.__suppress_context__  # not pyarrow's FileNotFoundError


@pytest.mark.parametrize("world", [1, 2, 3])
def test_ranks_split_evenly(tmp_path, monkeypatch, world):
    d = write_folder(tmp_path / "t", files=1, rows=1000, row_group=1000)  # one row group for every rank
    got = []
    for r in range(world):
        monkeypatch.setenv("RANK", str(r))
        monkeypatch.setenv("WORLD_SIZE", str(world))
        got.append(ids_of(UCDataset(d, batch_size=100, shuffle=True, seed=5)))
    assert max(map(len, got)) - min(map(len, got)) <= 1 and min(map(len, got)) > 0
    assert sorted(i for g in got for i in g) == list(range(1000))
    monkeypatch.delenv("WORLD_SIZE")
    with pytest.raises(DatasetError, match="only one of RANK"):
        list(UCDataset(d))


def test_shuffle_is_deterministic_per_epoch(tmp_path):
    d = write_folder(tmp_path / "t")
    a, b = UCDataset(d, shuffle=True, seed=1, window=500), UCDataset(d, shuffle=True, seed=1, window=500)
    e0 = ids_of(a)
    assert e0 == ids_of(b) and e0 != list(range(3000)) and sorted(e0) == list(range(3000))
    a.set_epoch(1)
    assert ids_of(a) != e0 and sorted(ids_of(a)) == list(range(3000))


def test_direct_iteration_resumes_exactly(tmp_path):
    d = write_folder(tmp_path / "t")
    ds = UCDataset(d, batch_size=100, shuffle=True, seed=2, window=256)
    it = iter(ds)
    first = ids_of([next(it) for _ in range(7)])
    state = ds.state_dict()
    again = UCDataset(d, batch_size=64, shuffle=True, seed=2, window=256)  # another batch size is fine
    again.load_state_dict(state)
    rest = ids_of(again)
    assert sorted(first + rest) == list(range(3000))
    # the same grid continues the same sequence: the rows a full epoch would have yielded next
    full = ids_of(UCDataset(d, batch_size=100, shuffle=True, seed=2, window=256))
    assert first + rest == full


def _delivered(loader, k):
    it = iter(loader)
    got = [next(it) for _ in range(k)]
    return ids_of(got), loader.state_dict()


def test_dataloader_workers_resume_on_a_changed_grid(tmp_path, monkeypatch):
    """2 ranks x 2 workers deliver some batches, then 1 rank x 3 workers finishes the epoch."""
    d = write_folder(tmp_path / "t", files=2, rows=1500, row_group=500)
    seen, states = [], []
    for rank, k in ((0, 5), (1, 3)):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        ds = UCDataset(d, batch_size=50, shuffle=True, seed=9, window=128)
        ids, st = _delivered(DataLoader(ds, batch_size=None, num_workers=2), k)
        seen += ids
        states.append(st)
    # what an all_gather under torch.distributed does: each rank's own streams
    merged = states[0]
    counts = merged["dataset"]["segments"][-1]["delivered"]
    other = states[1]["dataset"]["segments"][-1]["delivered"]
    merged["dataset"]["segments"][-1]["delivered"] = [max(a, b) for a, b in zip(counts, other, strict=True)]
    assert min(merged["dataset"]["segments"][-1]["delivered"]) >= 0
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    ds = UCDataset(d, batch_size=50, shuffle=True, seed=9, window=128)
    loader = DataLoader(ds, batch_size=None, num_workers=3)
    loader.load_state_dict(merged)
    rest = ids_of(loader)
    assert len(seen) == 8 * 50
    assert sorted(seen + rest) == list(range(3000))
    assert ids_of(loader) and sorted(ids_of(loader)) == list(range(3000))  # next epoch: everything again


def test_dataloader_two_workers_one_epoch(tmp_path):
    ds = UCDataset(write_folder(tmp_path / "t"), columns=["id", "s"], batch_size=128)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    batches = list(loader)
    assert all(isinstance(b["id"], torch.Tensor) and isinstance(b["s"], list) for b in batches)
    assert sorted(ids_of(batches)) == list(range(3000))
    assert loader.state_dict()["dataset"]["epoch"] == 1


def test_schema_change_is_refused_on_resume(tmp_path):
    d = write_folder(tmp_path / "t")
    ds = UCDataset(d, batch_size=100)
    it = iter(ds)
    next(it)
    state = ds.state_dict()
    write_folder(tmp_path / "t", extra=True)  # the table is rewritten with one more column
    with pytest.raises(TableSchemaError, match="schema of .* changed.*more: int64"):
        UCDataset(d, batch_size=100).load_state_dict(state)
    write_folder(tmp_path / "t")  # same schema, rewritten files
    os.utime(os.path.join(d, "part-00000.parquet"), (1, 1))
    with pytest.raises(DatasetError, match="data of .* changed"):
        UCDataset(d, batch_size=100).load_state_dict(state)


def test_volume_folder_reads_through_the_cache(tmp_path):
    from air_magics.cache import FileCache
    from air_magics.volumes import VolumeStore

    store = VolumeStore()
    store.create("main.demo.exports", exist_ok=True)
    folder = store.locate("/Volumes/main/demo/exports/features").path
    write_folder(folder, files=2, rows=500, row_group=200)
    cache = FileCache(store=store)
    ds = UCDataset("/Volumes/main/demo/exports/features", filter="id >= 250", cache=cache)
    assert ids_of(ds) == list(range(250, 1000))
    info = cache.info()
    assert info.entries == 2 and info.bytes == sum(
        os.path.getsize(os.path.join(folder, f"part-{i:05d}.parquet")) for i in range(2)
    )


# -- an embedded Spark table ----------------------------------------------------------------------------
@pytest.mark.spark
def test_embedded_table_by_name(shared_spark):
    """A table by name, through a DataLoader, an export and a schema change; up to a minute on a busy
    2-core machine (two loader workers import torch; the table is written twice and exported once)."""
    import pandas as pd

    from air_magics import tables

    df = pd.DataFrame({"id": np.arange(2000), "label": np.arange(2000) % 2, "name": [f"n{i}" for i in range(2000)]})
    tables.write_table(df, "main.t2test.features", mode="overwrite")
    ds = UCDataset("main.t2test.features", columns=["id", "name"], filter="label = 1", batch_size=300)
    assert len(ds) == 1000
    assert sorted(ids_of(ds)) == list(range(1, 2000, 2))
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    assert sorted(ids_of(loader)) == list(range(1, 2000, 2))
    from air_magics.volumes import VolumeStore

    VolumeStore().create("main.t2test.snap", exist_ok=True)  # the remote-server route: export, then read
    snap = UCDataset.from_export("main.t2test.features", "/Volumes/main/t2test/snap/features", filter="label = 0")
    assert snap.table.parts[0].volume and sorted(ids_of(snap)) == list(range(0, 2000, 2))
    state = UCDataset("main.t2test.features", batch_size=300).state_dict()
    tables.write_table(df.assign(label=df.label.astype(str)), "main.t2test.features", mode="overwrite")
    with pytest.raises(TableSchemaError, match="label: string"):
        UCDataset("main.t2test.features", batch_size=300).load_state_dict(state)


@pytest.mark.spark
def test_filters_match_spark_where_on_a_real_table(shared_spark):
    """The same filters through Spark's own WHERE and through UCDataset: the same rows, and the
    table above (SPARK_WHERE) is what Spark says. Also end to end: the SQL rewrite sends the query's
    strings as written (sqlglot regenerating it made 'it''s' another value)."""
    from air_magics import tables
    from air_magics.tables.session import get_session

    spark = get_session().spark
    spark.sql("CREATE DATABASE IF NOT EXISTS spark_catalog.main__t2test")
    spark.sql("DROP TABLE IF EXISTS spark_catalog.main__t2test.nulls")
    nan = "double('NaN')"
    spark.sql(
        "CREATE TABLE spark_catalog.main__t2test.nulls USING parquet AS SELECT * FROM VALUES "
        f"(0L, 1L, 1.0D, {nan}, 'a'), (1L, 2L, {nan}, {nan}, NULL), (2L, NULL, NULL, 1.0D, 'it\\'s'), "
        f"(3L, 3L, 5.0D, NULL, 'b'), (4L, NULL, {nan}, 2.0D, 'c'), (5L, 4L, 2.0D, 2.0D, NULL) AS v(k, id, x, y, s)"
    )
    for flt, want in SPARK_WHERE.items():
        by_spark = sorted(tables.read_table("main.t2test.nulls", where=flt)["k"].tolist())
        by_us = sorted(int(k) for b in UCDataset("main.t2test.nulls", filter=flt) for k in b["k"])
        assert (flt, by_spark) == (flt, want) and (flt, by_us) == (flt, want)
    doubled = tables.read_sql("SELECT 'it''s' AS v, k FROM main.t2test.nulls WHERE s = 'it\\'s'")
    assert doubled["k"].tolist() == [2] and doubled["v"].tolist() == [spark.sql("SELECT 'it''s' AS v").first().v]


@pytest.fixture
def remote_url(tmp_path_factory):
    """A separately started Spark Connect server with its own store, reached by URL. Private, not the
    run's shared remote one (conftest ``remote_spark``): the test kills it to show training needs no server."""
    import signal

    from conftest import start_remote_spark

    url, proc = start_remote_spark(tmp_path_factory.mktemp("remote-spark"))
    yield url, proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


@pytest.mark.spark
def test_remote_table_is_read_from_its_export_after_the_server_is_gone(remote_url, shared_spark):
    """A remote server's table: exported to a volume once, then training needs no server at all.
    Over a minute with its fixture here: the server it kills is its own (one JVM start)."""
    import signal

    import pandas as pd

    from air_magics import tables
    from air_magics.volumes import VolumeStore

    url, proc = remote_url
    df = pd.DataFrame({"id": np.arange(1500), "label": np.arange(1500) % 3})
    tables.write_table(df, "spark_catalog.default.t2_remote", mode="overwrite", remote=url)
    VolumeStore().create("main.t2test.snap", exist_ok=True)
    from air_magics.tables.session import get_session

    get_session()  # the embedded session is the active one: the remote checkpoint must not bind to it
    ds = UCDataset.from_export(  # via="auto": rows streamed through this client (tables/result_stream.py)
        "spark_catalog.default.t2_remote",
        "/Volumes/main/t2test/snap/remote",
        remote=url,
        batch_size=100,
        shuffle=True,
    )
    os.killpg(proc.pid, signal.SIGKILL)  # the server dies before the epoch starts
    proc.wait(timeout=60)
    it = iter(ds)
    first = ids_of([next(it) for _ in range(4)])
    again = UCDataset("/Volumes/main/t2test/snap/remote", batch_size=100, shuffle=True)
    again.load_state_dict(ds.state_dict())
    assert sorted(first + ids_of(again)) == list(range(1500))
