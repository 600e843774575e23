"""``%%air_copy``: sources held in notebook variables go on the magic line (``--from``); the body stays literal."""

import re

import pytest
from IPython.core.error import UsageError

from air_magics.volumes import VolumeStore


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    s.create("main.raw.scratch")
    for i in range(30):
        with s.open(f"/Volumes/main/raw/img/train/c{i % 3}/{i:04d}.jpg", "wb") as f:
            f.write(b"j" * (100 + i))
    return s


def test_a_source_in_a_variable_goes_on_the_line(ip, vol, tmp_path):
    local = tmp_path / "local"
    ip.user_ns["local_dir"] = str(local)
    ip.run_cell_magic("air_copy", "--to {local_dir} -q", "/Volumes/main/raw/img/train")
    assert len(list((local / "train" / "c1").iterdir())) == 10
    # back into a volume: the local folder named by a variable, expanded on the line on purpose
    report = ip.run_line_magic("air_copy", "--from {local_dir}/train/c1 --to /Volumes/main/raw/scratch/backup -q")
    assert report.ok and report.copied == 10
    assert len(vol.entries("/Volumes/main/raw/scratch/backup", recursive=True, with_dirs=False)) == 10
    # --from repeats and mixes with body lines
    both = ip.run_cell_magic(
        "air_copy",
        "--from $local_dir/train/c0 --from {local_dir}/train/c2 --to {local_dir}/both -q",
        "/Volumes/main/raw/img/train/c1",
    )
    assert both.ok and both.copied == 30
    assert sorted(p.name for p in (local / "both").iterdir()) == ["c0", "c1", "c2"]


def test_a_placeholder_in_the_body_is_literal_and_the_error_says_what_to_write(ip, vol, tmp_path):
    ip.user_ns["local_dir"] = str(tmp_path)
    with pytest.raises(UsageError) as info:
        ip.run_cell_magic("air_copy", "--to /Volumes/main/raw/scratch/b -q", "{local_dir}/train/c1")
    msg = str(info.value)
    assert "\n" not in msg and "taken literally" in msg and "--from {local_dir}/train/c1" in msg
    assert not (VolumeStore().root / "main/raw/scratch/b").exists()


def test_the_line_form_needs_a_source(ip, vol, tmp_path):
    with pytest.raises(UsageError, match="--from SRC"):
        ip.run_line_magic("air_copy", f"--to {tmp_path / 'd'}")
    assert not (tmp_path / "d").exists()


def test_help_names_the_cell_magic(ip):
    doc = ip.find_cell_magic("air_copy").__doc__
    assert "%%air_copy [--to DEST] [--from SRC]" in doc and "%air_copy [" not in doc.replace("%%air_copy", "")


def test_rates_are_shown_in_one_unit_family(ip, vol, tmp_path):
    """Rates are MB/s (10**6 bytes) everywhere, as the probe, the verdict and the sidebar show them
    (issue 37.7; issue 18 had made copy reports MiB/s while the probe said MB/s)."""
    report = ip.run_cell_magic("air_copy", f"--to {tmp_path / 'r'} -q", "/Volumes/main/raw/img/train")
    assert re.search(r"\d MB/s\)", report.summary()) and "iB/s" not in report.summary()
    from air_magics.widgets.checkpoint_view import _save_rows

    rows = _save_rows({"saves": [{"step": 1, "state": "committed", "bytes": 3 << 20, "seconds": 1.0, "mb_per_s": 3.1}]})
    assert "3.1 MB/s" in rows[0][2]
