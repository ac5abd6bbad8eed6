"""ps1's own fixtures: `given_loop`, the notebook's given training loop replayed by the grader,
and `records_of`, a student's rollout records checked against the notebook's contract.

The given `train` calls policy_loss inside `_update`'s `one_epoch`, jitted, in the student's
process: a policy_loss that looks for those frames on its stack (or for any sign of being inside
`train`) can return a loss that trains well there and its own wrong one wherever an item calls it
(issue 29, finding 9: both training items passed while every policy_loss item failed). So the
training items do not call `train`: the grader runs its loop itself, step by step, asking the
worker only what each step of `train` asks: a batch from the given `rollout`, from the same keys
`train` draws, and policy_loss's gradient, through the same call every policy_loss item makes;
the step `candidate - learning_rate * gradient` is taken here, in float32 as `train` takes it. The
student's code then meets a training step exactly as it meets an item, and no frame, call or jit
of the given loop is on its stack. For the reference the replay ends on the same bits as `train`
from every seed (tests/graders/test_ps1_training.py checks it), so the training items' margins,
measured with `train`, hold as they were.

The shared fixtures (`exact`, `models`, `params`, ...) come from the engine
(rlcourse.grading.fixtures), `student` from its grading plugin.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlcourse.grading.rubric import BadOutput, Field, as_array, as_records, fmt

RECORD_FIELDS = dict(
    observation=Field("integer", 0, 3, "the integer cells 0 to 3 (3 is the goal)"),
    action=Field("integer", 0, 1, "the integer actions 0 (left) and 1 (right)"),
    reward=Field("real", meaning="finite rewards"),
    active=Field("flag"), terminated=Field("flag"), truncated=Field("flag"),
    old_logp=Field("real", high=0.0, meaning="log-probabilities (finite, at most 0)"),
)
"""The notebook's contract for rollout's records, field by field (what the graders compute
with must hold it: observations index the oracle's logits)."""


def records_of(value, *, what: str, keys=tuple(RECORD_FIELDS)) -> dict:
    """`value` as rollout records with `keys`, each as RECORD_FIELDS says, or a BadOutput."""
    return as_records(value, what=what, fields={key: RECORD_FIELDS[key] for key in keys})


# --- jax.random.split, as `train` draws its keys ----------------------------------------------
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(key, counts):
    """JAX's Threefry-2x32 hash (jax._src.random.threefry2x32: 20 rounds, a key injection every
    four) of the counter pairs `counts` = (high words, low words) under the uint32 pair `key`."""
    def rotate_left(x, d):
        return (x << np.uint32(d)) | (x >> np.uint32(32 - d))

    k1, k2 = np.uint32(key[0]), np.uint32(key[1])
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(0x1BD11BDA))
    x = [counts[0] + ks[0], counts[1] + ks[1]]
    for block in range(5):
        for r in ROTATIONS[block % 2]:
            x[0] = x[0] + x[1]
            x[1] = rotate_left(x[1], r) ^ x[0]
        x[0] = x[0] + ks[(block + 1) % 3]
        x[1] = x[1] + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x


def split(key) -> tuple[np.ndarray, np.ndarray]:
    """`jax.random.split(key)` for a raw threefry key (uint32 [2]), as JAX 0.5 and later split
    (`jax_threefry_partitionable`, the default): the two new keys."""
    with np.errstate(over="ignore"):
        high, low = threefry2x32(key, (np.zeros(2, np.uint32), np.arange(2, dtype=np.uint32)))
    keys = np.stack([high, low], axis=-1).astype(np.uint32)
    return keys[0], keys[1]


def seed_key(seed: int) -> np.ndarray:
    """`jax.random.key(seed)`'s data for a 32-bit seed: (0, seed)."""
    return np.array([0, seed], dtype=np.uint32)


class GivenLoop:
    """`train(seed, updates, batch_size, horizon, method, epochs, learning_rate)` of the given
    cell, run here on the student's functions (see the module's docstring)."""

    def __init__(self, student, exact):
        self.student = student
        self.exact = exact

    def train(self, seed: int, *, method: str, epochs: int, updates: int = 40, batch_size: int = 256,
              horizon: int = 8, learning_rate: float = 0.5) -> np.ndarray:
        """The final logits of `train(seed=seed, method=method, epochs=epochs, ...)`. Like
        `train`, it evaluates the untrained and the trained policy with the student's
        exact_return (whose failure is training's), though only our DP judges the result."""
        key, theta = seed_key(seed), np.zeros(3, dtype=np.float32)
        rate = np.float32(learning_rate)
        self.student.call("exact_return", theta, horizon=horizon)
        for update in range(updates):
            key, sample_key = split(key)
            records = self.batch(theta, sample_key, batch_size, horizon, what=f"update {update + 1}")
            candidate = theta
            for _ in range(epochs):
                _, grad = self.student.value_and_grad("policy_loss", candidate, records, method,
                                                      wrt="theta", compiled=True)
                grad = as_array(grad, what=f"the gradient of policy_loss(method='{method}') in "
                                           f"training update {update + 1}", shape=(3,))
                candidate = (candidate - rate * grad.astype(np.float32)).astype(np.float32)
            theta = candidate
        self.student.call("exact_return", theta, horizon=horizon)
        return theta

    def batch(self, theta, key, batch_size: int, horizon: int, *, what: str) -> dict:
        """`rollout(theta, key, batch_size, horizon)`'s records, checked against the contract:
        the given code's batch of `theta`'s own episodes, with the student's own rewards (a
        notebook that rebinds the corridor's rewards or patches what rollout uses has
        them restored or is caught here, before its records reach the student's loss)."""
        reply = self.student.call("rollout", theta, key, batch_size, horizon)
        if not isinstance(reply, (list, tuple)) or len(reply) != 2:
            raise BadOutput(f"the given rollout returned a {type(reply).__name__} in training {what}",
                            "it returns (final_states, records): restore the given cells")
        records = records_of(reply[1], what=f"rollout's records in training {what}")
        if records["reward"].shape != (horizon, batch_size):
            raise BadOutput(f"the given rollout returned records of shape {records['reward'].shape}",
                            f"they should have shape [{horizon}, {batch_size}]: restore the given cells")
        exact = self.exact
        cells, actions = records["observation"].astype(np.int64), records["action"].astype(np.int64)
        reached = np.clip(cells + 2 * actions - 1, 0, exact.GOAL) == exact.GOAL
        rewards = np.where(records["active"], np.where(reached, exact.GOAL_REWARD, exact.STEP_COST), 0.0)
        behaviour = exact.log_pi(theta, cells, actions)
        if not np.allclose(records["reward"], rewards, rtol=0, atol=1e-6):
            raise BadOutput(f"the given rollout's rewards in training {what} are not your corridor's "
                            f"(step cost {exact.STEP_COST:g}, goal reward {exact.GOAL_REWARD:g})",
                            "the given environment is not yours to change: restore STEP_COST, "
                            "GOAL_REWARD, PARAMS and the given cells")
        if not np.allclose(records["old_logp"], behaviour, rtol=0, atol=1e-5):
            worst = np.max(np.abs(records["old_logp"] - behaviour))
            raise BadOutput(f"the given rollout's old_logp in training {what} is not the log-probability "
                            f"of its actions under the policy that collected them (off by {fmt(worst)})",
                            "restore the given cells")
        return reply[1]


@pytest.fixture(scope="session")
def default_params() -> dict:
    """The course's default values (assignment.toml's `[variants]` defaults, what PARAMS holds
    when no student id is set): what a student who typed the printed numbers in used."""
    from rlcourse.course.config import AssignmentConfig

    return AssignmentConfig.read(Path(__file__).with_name("assignment.toml")).variants.defaults


@pytest.fixture(scope="session")
def given_loop(student, exact):
    return GivenLoop(student, exact)


@pytest.fixture(scope="session", name="records_of")
def records_of_fixture():
    """`records_of(value, what=..., keys=...)`: a student's records checked against the contract."""
    return records_of
