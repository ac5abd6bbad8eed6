"""ps1's training items replay the given loop themselves (graders/ps1/conftest.py, issue 29,
finding 9): the replay must be `train` itself, bit for bit, for a loss that is one function, and
a loss that trains well only inside `train` must gain nothing from it."""
from pathlib import Path

import jax
import numpy as np
import pytest

from rlcourse.course.solutions import load_course_module, load_solution
from rlcourse.course.submission import load_submission
from rlcourse.grading.pipeline import Grader
from rlcourse.grading.student import StudentCode

ROOT = Path(__file__).resolve().parents[2]
given = load_course_module(ROOT / "graders" / "ps1" / "conftest.py", "ps1_grader_conftest")
oracle = load_solution(ROOT, "ps1", "exact")


@pytest.mark.parametrize("seed", [0, 1, 11, 101, 202, 303, 2 ** 31 - 1])
def test_the_replays_keys_are_jaxs(seed):
    """`train` draws `key, sample_key = jax.random.split(key)` from `jax.random.key(seed)`."""
    key, ours = jax.random.key(seed), given.seed_key(seed)
    assert np.array_equal(jax.random.key_data(key), ours)
    for _ in range(5):
        key, sample_key = jax.random.split(key)
        ours, our_sample = given.split(ours)
        assert np.array_equal(jax.random.key_data(key), ours)
        assert np.array_equal(jax.random.key_data(sample_key), our_sample)


@pytest.fixture(scope="module")
def reference(course):
    """The reference notebook in a worker, as the graders see it."""
    assignment = course.assignment("ps1")
    with Grader(assignment) as grader:
        student = StudentCode(grader._as_graded(load_submission(assignment.source_notebook)),
                              grader._launcher)
        try:
            yield student
        finally:
            student.close()


@pytest.mark.slow
@pytest.mark.parametrize("method, epochs", [("reinforce", 1), ("ppo", 3)])
def test_the_replay_ends_where_train_ends_bit_for_bit(reference, method, epochs):
    """From the graders' seeds the replay's final logits are `train`'s own, to the last bit, so
    the margins measured with `train` (graders/ps1/assignment.toml) are the replay's."""
    loop = given.GivenLoop(reference, oracle)
    for seed in (101, 202, 303):
        theta, _ = reference.call("train", seed=seed, method=method, epochs=epochs)
        assert np.array_equal(loop.train(seed, method=method, epochs=epochs), theta), seed


@pytest.mark.slow
def test_a_batch_with_other_rewards_than_the_students_is_refused(reference):
    """The replay checks rollout's records against the student's own corridor before the loss
    sees them: records made with other rewards (a rebound STEP_COST) are bad_output."""
    from rlcourse.grading.rubric import BadOutput

    theta = np.zeros(3, dtype=np.float32)
    loop = given.GivenLoop(reference, oracle.for_parameters({"step_cost": -0.05}))
    with pytest.raises(BadOutput, match="not your corridor's"):
        loop.batch(theta, given.seed_key(3), 256, 8, what="update 1")
    assert given.GivenLoop(reference, oracle).batch(theta, given.seed_key(3), 256, 8, what="update 1")
