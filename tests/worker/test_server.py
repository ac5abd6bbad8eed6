"""The worker's description of a call's arguments (what decides whether a hang may repeat), and
its watchdog (what answers for a request still running when its time is up)."""
import json
import os
import select
import socket
import threading
import time

import numpy as np
import pytest

from rlcourse.worker import protocol
from rlcourse.worker.server import HUNG, Session, Watchdog, describe_arguments


class NoRepr:
    """An array-like whose text would be costly to build: describing it must not ask for it."""

    shape = (6, 93)

    def __repr__(self):
        raise AssertionError("repr of an array argument was built")

    __str__ = __repr__


def test_arrays_are_described_by_shape_and_dicts_by_sorted_keys():
    described = json.loads(describe_arguments({
        "args": [np.zeros(3), {"reward": NoRepr(), "action": np.ones((6, 93), dtype=np.int32)}],
        "kwargs": {"method": "ppo", "clip": 0.1}}))
    assert described == {"args": ["shape(3,)", {"action": "shape(6, 93)", "reward": "shape(6, 93)"}],
                         "kwargs": {"clip": "0.1", "method": "'ppo'"}}


def test_the_numbers_inside_an_array_do_not_change_the_description():
    one = describe_arguments({"args": [{"old_logp": np.zeros((4, 28))}]})
    assert one == describe_arguments({"args": [{"old_logp": np.full((4, 28), -0.7)}]})
    assert one != describe_arguments({"args": [{"old_logp": np.zeros((6, 93))}]})


# --- the watchdog ---------------------------------------------------------------------------------
@pytest.fixture
def watched(monkeypatch):
    """(watchdog, the grader's end of its socket, the exits it asked for): a Watchdog on a socket
    pair, in this process, whose `os._exit` ends only the watchdog's thread."""
    grader_end, worker_end = socket.socketpair()
    exits = []

    def exit_watchdog_thread(code):
        exits.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", exit_watchdog_thread)
    monkeypatch.setattr(threading, "excepthook", lambda arguments: None)
    session = Session(framework=None)
    yield Watchdog(worker_end, session), grader_end, exits
    grader_end.close()
    worker_end.close()


def watchdog_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "rlcourse-watchdog"]


def test_one_thread_watches_every_request_and_requests_done_in_time_get_no_answer(watched):
    watchdog, grader_end, exits = watched
    seen = []
    for number in range(40):
        watchdog.run(f"request {number}", 0.2, lambda: seen.extend(watchdog_threads()))
    time.sleep(0.5)  # past every request's deadline: none of them is still running
    assert len({id(thread) for thread in seen}) == 1, "a thread was started for a request"
    assert exits == []
    assert select.select([grader_end], [], [], 0)[0] == [], "a request done in time was answered"


def test_a_request_past_its_time_is_answered_with_where_it_is_stuck_then_the_worker_ends(watched):
    watchdog, grader_end, exits = watched
    watchdog.run("earlier", 5.0, lambda: None)
    exec(compile("import time\n"
                 "def wait_for(exits):\n"
                 "    while not exits and time.monotonic() < give_up:\n"
                 "        time.sleep(0.01)\n", "<cell 3>", "exec"), watchdog._session.namespace)
    watchdog._session.namespace["give_up"] = time.monotonic() + 10
    started = time.monotonic()
    watchdog.run("stuck", 0.3, lambda: watchdog._session.namespace["wait_for"](exits))
    assert exits == [0]
    assert 0.3 <= time.monotonic() - started < 2
    answer = protocol.receive_message(grader_end, timeout=5)
    assert answer["id"] == "stuck" and answer["ok"] is False
    assert answer["error"]["type"] == HUNG
    assert answer["error"]["message"].startswith(f"{HUNG}: wait_for ")
    assert answer["error"]["where"] in ("cell 3, line 3", "cell 3, line 4")
