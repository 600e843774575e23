"""Soak (issue 36): one cache at half the data, four workloads at once (raw ``path``, raw ``bytes``,
packed ``path``, packed ``bytes``), one SIGKILLed and restarted in turn every few hundred items;
then ``check()`` finds nothing, no dead process's folder is left, a last epoch of each yields every
file with its bytes, and the sampled disk use never went over the limit plus the windows' share. The machinery is the
benchmark's (``benchmarks/scenarios/soak.py``, whose longer form runs a minute)."""

from benchmarks.scenarios.soak import report, run_soak


def test_four_workloads_under_kills_stay_within_the_limit_and_exact(tmp_path):
    res = run_soak(tmp_path, files=2600, seconds=60, kills=4)  # each of the four workloads killed once
    text = report(res)
    print(text)
    assert not res.failed, text
    assert res.kills >= 4, f"only {res.kills} kills in a minute: every workload must have been killed once"
    assert not res.findings and res.dead_left == 0, text
    assert not res.inexact, text
    assert res.overflows > 0 and res.peak > res.limit // 2  # the cache filled up and files went past it
    # issue 49's target, peak <= 1.05x the limit, is bench_soak's (1.000-1.017x there on a quiet
    # machine); how far a killed worker's window lingers before a restarted one sweeps it depends on the
    # machine's load (1.086x in one full run at load 17 here), so the suite holds the sampled peak to the
    # limit plus every workload's window share in flight (a quarter of the limit, the windows' bound)
    assert res.peak <= res.limit * 1.25, text
