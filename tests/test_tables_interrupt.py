"""Ctrl-C during Spark Connect calls, against the run's shared embedded server: the session keeps working."""

import random
import signal
import threading
import time

import pytest

from air_magics import tables
from air_magics.tables.interruptible import raise_if_cancelled, run_interruptible
from air_magics.tables.session import get_session

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True)
def _spark_env(shared_spark):
    """The run's shared embedded server (conftest ``spark_server``)."""


def _answers_within(seconds: float) -> bool:
    """A query on the same session returns within *seconds* (run aside: a wedged channel never returns)."""
    got: list[int] = []
    th = threading.Thread(target=lambda: got.append(int(tables.read_sql("SELECT 42 AS n").n[0])), daemon=True)
    th.start()
    th.join(seconds)
    return got == [42]


def _sigint_after(delay: float) -> threading.Thread:
    def fire() -> None:
        time.sleep(delay)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    th = threading.Thread(target=fire, daemon=True)
    th.start()
    return th


def test_ctrl_c_at_any_moment_of_a_query_leaves_the_session_working():
    """SIGINTs at random moments of a stream of queries. Raised inside grpc's Python code, one used to
    leave a lock of the channel held, and the next query waited forever (2 runs of 3 hung within 12)."""
    tables.read_sql("SELECT 1 AS n")
    rnd = random.Random(7)
    for i in range(20):
        fired = _sigint_after(rnd.uniform(0.0, 0.15))
        with pytest.raises(KeyboardInterrupt):
            for _ in range(200):
                tables.read_sql("SELECT count(*) AS n FROM range(100000)")
        fired.join()
        assert _answers_within(60), f"the session stopped answering after interrupt {i}"


def test_an_interrupted_call_stops_its_server_query_and_raises_keyboard_interrupt():
    s = get_session()
    started = time.monotonic()
    fired = _sigint_after(1.0)
    with pytest.raises(KeyboardInterrupt):  # a query of minutes, interrupted on the server
        run_interruptible(s.spark, lambda: s.spark.sql("SELECT count(*) FROM range(100000000000)").collect())
    fired.join()
    assert time.monotonic() - started < 30
    assert _answers_within(60)


def test_a_worker_that_ignores_the_interrupt_is_reported_stuck():
    s = get_session()
    stuck: list[bool] = []
    release = threading.Event()
    fired = _sigint_after(0.2)
    with pytest.raises(KeyboardInterrupt):
        run_interruptible(s.spark, lambda: release.wait(30), on_stuck=lambda: stuck.append(True), grace=1.0)
    fired.join()
    release.set()
    assert stuck == [True]


def test_a_client_loop_stops_between_queries_and_off_the_main_thread_calls_run_inline():
    s = get_session()
    queries: list[int] = []

    def loop() -> None:
        for i in range(10_000):  # each query is short: only the check between them stops the loop
            raise_if_cancelled()
            queries.append(i)
            time.sleep(0.01)

    fired = _sigint_after(0.3)
    with pytest.raises(KeyboardInterrupt):
        run_interruptible(s.spark, loop)
    fired.join()
    n = len(queries)
    time.sleep(0.2)
    assert 0 < n < 10_000 and len(queries) == n  # the loop ended with the interrupt
    raise_if_cancelled()  # a no-op outside a worker
    names: list[str] = []
    th = threading.Thread(
        target=lambda: names.append(run_interruptible(s.spark, lambda: threading.current_thread().name))
    )
    th.start()
    th.join()
    assert names == [th.name]
    assert run_interruptible(object(), lambda: threading.current_thread().name) == "MainThread"
