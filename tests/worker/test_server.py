"""The worker's description of a call's arguments (what decides whether a hang may repeat)."""
import json

import numpy as np

from rlcourse.worker.server import describe_arguments


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
