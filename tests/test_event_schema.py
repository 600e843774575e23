"""One event schema: the Python event dataclasses define every document; the sidebar's TypeScript
interfaces (labextension/src/api.ts) must name exactly the same fields, so a field added, renamed
or dropped on either side alone fails here."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from air_magics.events import CacheEvent, CheckpointEvent, CopyEvent, Event, ExportEvent, LoaderEvent, PackEvent
from air_magics.server.queries import JOB_EVENTS, JOB_EXTRA
from air_magics.snapshots import CopyProgress, PackProgress, PackReport, document_keys

API_TS = Path(__file__).resolve().parents[1] / "labextension" / "src" / "api.ts"


def ts_interfaces(source: str) -> dict[str, list[str]]:
    """``{interface name: its top-level field names}`` of every ``interface`` in a TypeScript source."""
    source = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    source = re.sub(r"//[^\n]*", "", source)
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"\binterface\s+(\w+)[^{]*\{", source):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            i += 1
        body = source[m.end() : i - 1]
        while (flat := re.sub(r"\{[^{}]*\}", "", body)) != body:  # nested object types are not fields here
            body = flat
        out[m.group(1)] = re.findall(r"(?:^|[;\n])\s*(\w+)\??\s*:", body)
    return out


@pytest.fixture(scope="module")
def ts() -> dict[str, list[str]]:
    return ts_interfaces(API_TS.read_text())


# interface -> (the Python class whose document it is, keys the status layer adds to that document)
DOCUMENTS: dict[str, tuple[type[Event], set[str]]] = {
    "ICopyDoc": (CopyEvent, set()),
    "IExportDoc": (ExportEvent, set()),
    "IPackDoc": (PackEvent, set()),
    "ICacheStats": (CacheEvent, {"updated", "snapshot_time"}),
    "ILoaderStats": (LoaderEvent, {"updated", "history"}),
}


@pytest.mark.parametrize("interface", sorted(DOCUMENTS))
def test_typescript_interface_names_the_events_fields(ts, interface):
    event, added = DOCUMENTS[interface]
    keys = event.keys()
    assert len(set(keys)) == len(keys), f"{event.__name__} writes a key twice: {keys}"
    assert len(set(ts[interface])) == len(ts[interface])
    assert set(ts[interface]) == set(keys) | added, (
        f"{interface} in {API_TS.name} and {event.__name__}'s document differ: "
        f"only in TypeScript {sorted(set(ts[interface]) - set(keys) - added)}, "
        f"only in Python {sorted(set(keys) | added - set(ts[interface]))}"
    )


def test_every_job_kind_has_its_interface_and_the_rest_extras(ts):
    assert set(ts["IJobExtra"]) == set(JOB_EXTRA)
    assert set(JOB_EVENTS) == {"copy", "export", "pack"}
    for kind, event in JOB_EVENTS.items():
        assert DOCUMENTS[f"I{kind.capitalize()}Doc"][0] is event
    source = API_TS.read_text()
    union = re.search(r"export type IJob = ([^;]+);", source)
    assert union and {t.strip() for t in union.group(1).split("|")} == {"ICopyJob", "IExportJob", "IPackJob"}


def test_the_pack_report_and_the_checkpoint_folder(ts):
    assert set(ts["IPackReport"]) == {f.name for f in fields(PackReport)} == set(document_keys(PackReport))
    assert set(CheckpointEvent.keys()) <= set(ts["ICheckpointFolder"])  # the REST answer adds the folder's steps


def test_documents_are_the_events_own_fields():
    """Read off the dataclasses, not written out by hand: a new field shows up in the document."""
    p = CopyProgress(10, 4, 1, 0, 1000, 400, 2.0)
    doc = CopyEvent(job="j", progress=p, dest="/d").to_dict()
    assert list(doc) == list(CopyEvent.keys())
    assert doc["files_done"] == 5 and doc["eta"] == pytest.approx(2.0) and doc["finished"] is None
    done = PackEvent(job="/Volumes/a/b/c/p", state="done", progress=PackProgress(1, 1, 2, 2, 1, 1, 0.5))
    assert done.to_dict()["finished"] == done.time and done.to_dict()["report"] is None
    assert set(ExportEvent(dest="/x").to_dict()) == set(ExportEvent.keys())


def test_the_parser_sees_drift():
    ts = ts_interfaces("export interface IA {\n  a: number;\n  // b: gone\n  c?: { d: string }[];\n}\n")
    assert ts == {"IA": ["a", "c"]}


def test_the_training_chart_spec(ts):
    """The chart spec the sidebar draws (``GET training``) has the fields its TypeScript types name."""
    from air_magics.charts import LoaderHistory, training_spec
    from air_magics.server.queries import training

    h = LoaderHistory()
    for i, step in enumerate((10, 20, 30)):
        h.add({"steps": step, "items": step, "data_wait_s": 0.1 * step, "compute_s": 0.1 * step}, 100.0 + i)
    spec = training_spec([{"history": h.document()}])
    panel = spec["panels"][0]
    assert set(ts["IChartSpec"]) == set(spec)
    assert set(ts["IChartPanel"]) == set(panel)
    assert set(ts["IChartSeries"]) == set(panel["series"][0])
    assert set(ts["IChartBand"]) == set(next(p for p in spec["panels"] if p["bands"])["bands"][0])
    assert set(ts["ITrainingDoc"]) == set(training())
    x_type = re.search(r"interface IChartSpec \{.*?\bx: \{([^}]*)\}", API_TS.read_text(), flags=re.S)
    assert x_type and set(re.findall(r"(\w+):", x_type.group(1))) == set(spec["x"])
