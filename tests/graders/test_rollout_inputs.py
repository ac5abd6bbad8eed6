"""Every input a grader generates is one a real rollout can produce under the notebook's contract.

Each assignment's rollout invariants are written once, next to the generator that makes the
inputs (`rollout_violations`, `batch_violations` or `episode_violations` in the grader module).
These tests run the hidden items in pytest, as grading does (same conftest, same seeds), with a
stand-in submission that records every call and answers it with the exact oracle; then every
recorded input must satisfy the invariants. A new item or case in these modules is covered
without being listed here.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlcourse.course.directory import Course
from rlcourse.course.diagnoses import load_diagnoses
from rlcourse.grading.plugin import GradingPlugin
from rlcourse.course.solutions import load_course_module, load_solution
from rlcourse.worker.errors import WorkerError

ROOT = Path(__file__).resolve().parents[2]
COURSE = Course(ROOT)


class RecordingStudent:
    """Stands in for a submission: records every call (with the item that made it) and answers
    the functions it is given: `answers[f](*args, **kwargs)` for a call, `gradients[f](wrt,
    *args, **kwargs)` (value and gradient) for value_and_grad."""

    def __init__(self, answers: dict, gradients: dict | None = None):
        self.answers, self.gradients = answers, gradients or {}
        self.calls = []
        self.item = None

    def pytest_runtest_setup(self, item):
        self.item = item.originalname

    def call(self, function, *args, compiled=False, **kwargs):
        self.calls.append((self.item, function, args, kwargs))
        if function not in self.answers:
            raise WorkerError("not_implemented", f"{function} is not answered here")
        return self.answers[function](*args, **kwargs)

    def value_and_grad(self, function, *args, wrt, compiled=False, **kwargs):
        self.calls.append((self.item, function, args, kwargs))
        if function not in self.gradients:
            raise WorkerError("not_implemented", f"gradients of {function} are not answered here")
        return self.gradients[function](wrt, *args, **kwargs)

    def get(self, *names):
        raise WorkerError("missing_name", "no notebook variables here")


def run_items(name, grader_file, answers, tmp_path, gradients=None, params=None):
    """Runs one grader module's items against a RecordingStudent (graded with `params`, the
    defaults if None); returns (calls, results), each call as (item, function, args, kwargs)."""
    assignment = COURSE.assignment(name)
    student = RecordingStudent(answers, gradients)
    tags = set(load_diagnoses(assignment.grader_dir))
    plugin = GradingPlugin(student, known_tags=tags, params=params)
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\naddopts =\n")
    code = pytest.main([str(assignment.grader_dir / grader_file), "-p", "no:cacheprovider",
                        "-p", "no:terminal", "--assert=plain", "--import-mode=importlib",
                        "--rootdir", str(ROOT), "--confcutdir", str(assignment.grader_dir),
                        "-c", str(ini), "-W", "ignore::DeprecationWarning"], plugins=[plugin, student])
    assert not plugin.collection_errors and not plugin.internal_errors, \
        plugin.collection_errors + plugin.internal_errors
    assert code in (0, 1)
    return student.calls, plugin.results


def grader(name, grader_file):
    return load_course_module(ROOT / "graders" / name / grader_file, f"rollout_inputs_{name}_{Path(grader_file).stem}")


# --- ps1 ------------------------------------------------------------------------------------------
HAND_CHOSEN_REWARDS = {"test_reinforce_gradient_exact", "test_ppo_clip_both_signs"}
"""The items whose rewards are set by hand (each episode's scaled by its probability; one-step
episodes with a chosen advantage), as policy_loss's docstring says the graders may do."""


@pytest.mark.parametrize("params", [None, {"seed": 5, "clip": 0.1, "step_cost": -0.05, "goal_reward": 1.2}],
                         ids=["defaults", "other rewards"])
def test_ps1_every_policy_loss_input_is_a_rollout(tmp_path, params):
    """With the defaults and with a student's own rewards: the records carry that student's
    corridor rewards (the graders' oracle is bound to them)."""
    exact = load_solution(ROOT, "ps1", "exact").for_parameters(params or {})
    module = grader("ps1", "test_policy_loss.py")

    def loss(theta, records, method="ppo", clip=0.2):
        return np.float64(exact.surrogate_loss(theta, module.as_received(records), method, clip))

    def loss_and_grad(wrt, theta, records, method="ppo", clip=0.2):
        received = module.as_received(records)
        grad = (exact.surrogate_gradient(theta, received, method, clip) if wrt == "theta"
                else np.zeros_like(records["old_logp"]))
        return np.float64(exact.surrogate_loss(theta, received, method, clip)), grad

    calls, results = run_items("ps1", "test_policy_loss.py", {"policy_loss": loss}, tmp_path,
                               {"policy_loss": loss_and_grad}, params=params)
    assert results and all(result.passed for result in results), [r.id for r in results if not r.passed]
    checked = [(item, args[1]) for item, function, args, _ in calls if function == "policy_loss"]
    assert len(checked) >= 20 and {item for item, _ in checked} >= HAND_CHOSEN_REWARDS
    for item, records in checked:
        assert module.rollout_violations(
            exact, records, rewards_from_the_corridor=item not in HAND_CHOSEN_REWARDS) == [], item


def test_ps1_rollout_violations_sees_each_broken_invariant():
    exact = load_solution(ROOT, "ps1", "exact")
    module = grader("ps1", "test_policy_loss.py")
    records = module.as_sent(exact.sample_episodes(np.array([0.2, -0.3, 0.5]), 4, 28,
                                                   np.random.default_rng(3)))
    assert module.rollout_violations(exact, records) == []

    def broken(key, change):
        value = records[key].copy()
        change(value)
        return module.rollout_violations(exact, dict(records, **{key: value}))

    assert broken("old_logp", lambda v: v.__setitem__((0, 0), v[0, 0] + 0.3))
    assert broken("reward", lambda v: v.__setitem__((0, 0), 0.5))
    assert broken("terminated", lambda v: v.__setitem__((0, 0), ~v[0, 0]))
    assert broken("active", lambda v: v.__setitem__((1, slice(None)), False))
    assert broken("observation", lambda v: v.__setitem__((1, 0), (v[1, 0] + 2) % 3))
    assert module.rollout_violations(exact, dict(records, reward=records["reward"].astype(np.float64)))


# --- ps2 ------------------------------------------------------------------------------------------
def test_ps2_every_compute_gae_input_is_a_rollout(tmp_path):
    exact = load_solution(ROOT, "ps2", "exact")
    gae = grader("ps2", "test_gae.py")
    answers = {"compute_gae": lambda *args, gamma, lam: exact.gae_by_definition(*args, gamma=gamma, lam=lam)}
    calls, results = run_items("ps2", "test_gae.py", answers, tmp_path)
    # The oracle answers every case, so every item ran to its end and recorded all its inputs.
    assert results and all(result.passed for result in results), [r.id for r in results if not r.passed]
    buffers = [dict(zip(("rewards", "values", "next_values", "terminated", "truncated"), args))
               for _, function, args, _ in calls if function == "compute_gae"]
    assert len(buffers) >= 10
    for buffer in buffers:
        assert gae.rollout_violations(buffer) == []


def test_ps2_rollout_violations_sees_each_broken_invariant():
    """The check is not vacuous: each invariant, broken on its own, is reported."""
    gae = grader("ps2", "test_gae.py")
    buffer = gae.random_buffer(np.random.default_rng(0), 6, 3)
    assert gae.rollout_violations(buffer) == []
    went_on = np.argwhere(~(buffer["terminated"] | buffer["truncated"])[:-1])[0]
    broken_chain = dict(buffer, next_values=buffer["next_values"].copy())
    broken_chain["next_values"][tuple(went_on)] += 1.0
    both = dict(buffer, terminated=buffer["terminated"].copy(), truncated=buffer["truncated"].copy())
    both["terminated"][0, 0] = both["truncated"][0, 0] = True
    float32 = dict(buffer, rewards=buffer["rewards"].astype(np.float32))
    for broken in (broken_chain, both, float32):
        assert gae.rollout_violations(broken) != []


# --- ps3 ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ps3_exact():
    return load_solution(ROOT, "ps3", "exact")


def test_ps3_every_gae_input_is_a_rollout(tmp_path, ps3_exact):
    module = grader("ps3", "test_gae.py")
    calls, results = run_items("ps3", "test_gae.py", {"gae": ps3_exact.gae_by_definition}, tmp_path)
    assert results and all(result.passed for result in results), [r.id for r in results if not r.passed]
    arguments = [args for _, function, args, _ in calls if function == "gae"]
    assert len(arguments) >= 5
    for args in arguments:
        assert module.rollout_violations(*args) == []


def test_ps3_every_td_advantage_input_is_a_rollout(tmp_path, ps3_exact):
    module = grader("ps3", "test_td_advantage.py")
    calls, results = run_items("ps3", "test_td_advantage.py", {"td_advantage": ps3_exact.td_errors},
                               tmp_path)
    assert results and all(result.passed for result in results), [r.id for r in results if not r.passed]
    arguments = [args for _, function, args, _ in calls if function == "td_advantage"]
    assert len(arguments) >= 3
    for args in arguments:
        assert module.rollout_violations(*args) == []


def test_ps3_rollout_violations_see_each_broken_invariant(ps3_exact):
    gae = grader("ps3", "test_gae.py")
    args = list(gae.buffer(np.random.default_rng(1), 8, {2: "terminated", 5: "truncated"})) + [0.9, 0.8]
    assert gae.rollout_violations(*args) == []
    chain = list(args)
    chain[2] = args[2].copy()
    chain[2][0] += 1.0
    both = list(args)
    both[4] = args[4].copy()
    both[4][2] = True
    assert gae.rollout_violations(*chain) != [] and gae.rollout_violations(*both) != []

    td = grader("ps3", "test_td_advantage.py")
    rewards, values, next_values, terminated = td.run_of_steps(np.random.default_rng(2), 12)
    assert td.rollout_violations(rewards, values, next_values, terminated, 0.9) == []
    went_on = np.flatnonzero(~terminated[:-1] & (next_values[:-1] == values[1:]))
    second_break = next_values.copy()
    second_break[went_on[0]] += 1.0  # a second unflagged end within 200 steps: impossible
    assert td.rollout_violations(rewards, values, second_break, terminated, 0.9) != []


@pytest.mark.parametrize("grader_file", ["test_reinforce_logit_grad.py", "test_ppo_logit_grad.py"])
def test_ps3_every_logit_gradient_input_is_a_policy_batch(tmp_path, ps3_exact, grader_file):
    module = grader("ps3", "test_reinforce_logit_grad.py")
    answers = {
        "reinforce_logit_grad": lambda probs, actions, weights:
            ps3_exact.reinforce_logit_grad(np.log(probs), actions, weights),
        "ppo_logit_grad": lambda probs, old, actions, advantages, eps=0.2:
            ps3_exact.ppo_logit_grad(np.log(probs), old, actions, advantages, eps)}
    calls, results = run_items("ps3", grader_file, answers, tmp_path)
    assert results and all(result.passed for result in results), [r.id for r in results if not r.passed]
    checked = 0
    for _, function, args, _ in calls:
        if function == "reinforce_logit_grad":
            assert module.batch_violations(*args) == []
        elif function == "ppo_logit_grad":
            probs, old, actions, advantages = args[:4]
            assert module.batch_violations(probs, actions, advantages, old) == []
        checked += function in answers
    assert checked >= 3


def test_ps3_batch_violations_sees_each_broken_invariant():
    module = grader("ps3", "test_reinforce_logit_grad.py")
    probs = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
    actions, weights = np.array([0, 1, 1]), np.array([1.0, -2.0, 0.5])
    assert module.batch_violations(probs, actions, weights, probs[::-1].copy()) == []
    assert module.batch_violations(probs * 1.1, actions, weights)
    assert module.batch_violations(probs, np.array([0, 2, 1]), weights)
    assert module.batch_violations(probs, actions, weights, np.array([[1.2, -0.2], [0.5, 0.5], [0.5, 0.5]]))


def test_ps2_every_update_probe_is_a_rollout_of_its_initial_policy():
    """ppo_update's probes are built by one function, `probe_inputs`, for each probe number."""
    exact = load_solution(ROOT, "ps2", "exact")
    update = grader("ps2", "test_update.py")
    for number, probe in enumerate(update.PROBES):
        batch, params = update.probe_inputs(number)
        assert update.rollout_violations(exact, batch, params, probe["settings"]) == []
        shifted = dict(batch, logp=batch["logp"] + 0.01)
        assert update.rollout_violations(exact, shifted, params, probe["settings"]) != []


def test_ps3_every_discounted_returns_input_is_an_episode(tmp_path, ps3_exact):
    module = grader("ps3", "test_discounted_returns.py")
    calls, results = run_items("ps3", "test_discounted_returns.py",
                               {"discounted_returns": ps3_exact.reward_to_go}, tmp_path)
    assert results and all(result.passed for result in results), [r.id for r in results if not r.passed]
    arguments = [args for _, function, args, _ in calls if function == "discounted_returns"]
    assert len(arguments) >= 5
    for args in arguments:
        assert module.episode_violations(*args) == []
    assert module.episode_violations(np.ones(3, dtype=np.float32), 0.9)
    assert module.episode_violations(np.ones(3), 1.5)
