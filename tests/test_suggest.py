"""One did-you-mean rule for flags and table names: a second guess only when about as close."""

from air_magics.suggest import closest


def test_a_second_guess_only_when_about_as_close():
    assert closest("main.tset.nums", ["main.test.nums", "main.t2test.nulls"], cutoff=0.75) == ["main.test.nums"]
    assert closest("--patern", ["--pattern", "--repair"]) == ["--pattern"]
    assert closest("colr", ["color", "colour"]) == ["color", "colour"]


def test_nothing_close_is_no_guess():
    assert closest("zzzz", ["--pattern", "--repair"]) == []
    assert closest("x", []) == []
