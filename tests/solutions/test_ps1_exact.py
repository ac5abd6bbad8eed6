"""The ps1 oracle: each fast path agrees with an obviously correct slow one, with the default
rewards and with others a student may have, and with the JAX reference solution (the second
check)."""
import numpy as np
import pytest

from rlcourse.course.solutions import load_solution

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
exact = load_solution(ROOT, "ps1", "exact")
OTHER_REWARDS = [exact.Corridor(-0.05, 0.9), exact.Corridor(-0.02, 1.2), exact.Corridor(-0.3, 2.5)]
"""Rewards other than the defaults: the extremes of assignment.toml's sets, and one far outside
them (the oracle must not lean on the course's values)."""
EVERY_CORRIDOR = [exact.DEFAULT, *OTHER_REWARDS]


def finite_difference(f, theta, step=1e-6):
    theta = np.asarray(theta, dtype=np.float64)
    return np.array([(f(theta + step * e) - f(theta - step * e)) / (2 * step) for e in np.eye(theta.size)])


def off_policy_batch(seed, horizon=6, batch=40, shift=(0.9, -0.8, 0.6)):
    rng = np.random.default_rng(seed)
    theta_old = rng.normal(0, 0.5, 3)
    return theta_old + np.array(shift), exact.sample_episodes(theta_old, horizon, batch, rng)


class TestDynamicProgramming:
    @pytest.mark.parametrize("name, logits, horizon, value", [
        ("always-left", -100.0, 8, -0.08), ("uniform", 0.0, 8, 0.466875),
        ("always-right", 100.0, 8, 0.985), ("always-right, horizon 2", 100.0, 2, 0.485)])
    def test_course_figures(self, name, logits, horizon, value):
        assert exact.dp_return(np.full(3, logits), horizon) == pytest.approx(value, abs=1e-12)

    @pytest.mark.parametrize("horizon", range(1, 11))
    @pytest.mark.parametrize("corridor", EVERY_CORRIDOR, ids=repr)
    def test_dp_equals_enumeration_of_every_episode(self, horizon, corridor):
        theta = np.random.default_rng(horizon).normal(0, 1.5, 3)
        assert exact.dp_return(theta, horizon, corridor=corridor) == pytest.approx(
            exact.enumerated_return(theta, horizon, corridor=corridor), abs=1e-12)

    @pytest.mark.parametrize("corridor", EVERY_CORRIDOR, ids=repr)
    def test_closed_forms_the_notebook_states(self, corridor):
        """The visible checks' closed forms, for any rewards: always left pays 8 step costs;
        uniform reaches the goal with probability 67/128 after 181/32 paid steps on average;
        always right pays 2 step costs from cell 0 and 1 from cell 1, then the goal."""
        s, g = corridor.step_cost, corridor.goal_reward
        assert exact.dp_return(np.full(3, -np.inf), 8, corridor=corridor) == pytest.approx(8 * s, abs=1e-12)
        assert exact.uniform_return(corridor=corridor) == pytest.approx(67 / 128 * g + 181 / 32 * s, abs=1e-12)
        assert exact.best_return(corridor=corridor) == pytest.approx(g + 1.5 * s, abs=1e-12)
        assert exact.dp_return(np.full(3, np.inf), 2, corridor=corridor) == pytest.approx(g / 2 + 1.5 * s, abs=1e-12)

    @pytest.mark.parametrize("corridor", EVERY_CORRIDOR, ids=repr)
    def test_always_right_is_the_best_any_policy_does(self, corridor):
        rng = np.random.default_rng(5)
        for horizon in (1, 2, 3, 8):
            best = exact.best_return(horizon, corridor=corridor)
            assert all(exact.dp_return(rng.normal(0, 3, 3), horizon, corridor=corridor) <= best + 1e-12
                       for _ in range(200))

    def test_progress_is_the_share_of_the_way_from_uniform_to_best(self):
        """0.9 with the default rewards is the same share of the way as at_progress gives for
        others, and the two functions invert each other."""
        share = exact.progress(0.9)
        assert share == pytest.approx((0.9 - 0.466875) / (0.985 - 0.466875), abs=1e-12)
        assert exact.at_progress(share) == pytest.approx(0.9, abs=1e-12)
        for corridor in OTHER_REWARDS:
            value = exact.at_progress(share, corridor=corridor)
            assert exact.progress(value, corridor=corridor) == pytest.approx(share, abs=1e-12)

    @pytest.mark.parametrize("corridor", EVERY_CORRIDOR, ids=repr)
    def test_sampled_rewards_are_the_corridors(self, corridor):
        records = exact.sample_episodes(np.array([0.2, -0.4, 0.9]), 6, 50, np.random.default_rng(1),
                                        corridor=corridor)
        reached = records["terminated"]
        expected = np.where(records["active"], np.where(reached, corridor.goal_reward, corridor.step_cost), 0.0)
        np.testing.assert_array_equal(records["reward"], expected)

    @pytest.mark.parametrize("horizon", [1, 3, 8])
    def test_enumerated_probabilities_sum_to_one(self, horizon):
        _, probability = exact.enumerate_episodes(np.array([0.3, -1.0, 2.0]), horizon)
        assert probability.sum() == pytest.approx(1.0, abs=1e-12)


class TestGradients:
    @pytest.mark.parametrize("horizon", [2, 5, 8])
    @pytest.mark.parametrize("corridor", EVERY_CORRIDOR, ids=repr)
    def test_exact_gradient_is_the_derivative_of_the_return(self, horizon, corridor):
        theta = np.random.default_rng(7 + horizon).normal(0, 1, 3)
        numeric = finite_difference(lambda t: exact.dp_return(t, horizon, corridor=corridor), theta)
        np.testing.assert_allclose(exact.exact_gradient(theta, horizon, corridor=corridor), numeric, atol=1e-8)

    @pytest.mark.parametrize("method, clip", [("reinforce", 0.2), ("ppo", 0.1), ("ppo", 0.3)])
    def test_closed_form_loss_gradient_matches_finite_differences(self, method, clip):
        theta, records = off_policy_batch(3)
        numeric = finite_difference(lambda t: exact.surrogate_loss(t, records, method, clip), theta)
        np.testing.assert_allclose(exact.surrogate_gradient(theta, records, method, clip), numeric, atol=1e-7)

    @pytest.mark.parametrize("corridor", EVERY_CORRIDOR, ids=repr)
    def test_reinforce_gradient_over_weighted_episodes_is_minus_exact_gradient(self, corridor):
        """The identity the REINFORCE grader relies on: rewards scaled by n * P(episode)."""
        theta = np.array([-0.2, 0.3, 0.7])
        records, probability = exact.enumerate_episodes(theta, 6, corridor=corridor)
        records["reward"] = records["reward"] * (probability.size * probability)[None, :]
        np.testing.assert_allclose(-exact.surrogate_gradient(theta, records, "reinforce"),
                                   exact.exact_gradient(theta, 6, corridor=corridor), atol=1e-12)


class TestOneStudentsOracle:
    """for_parameters: what the graders' `exact` fixture is for a student."""

    def test_binds_the_students_rewards_under_the_same_names(self):
        student = exact.for_parameters({"seed": 3, "clip": 0.1, "step_cost": -0.05, "goal_reward": 0.9})
        corridor = exact.Corridor(-0.05, 0.9)
        theta = np.array([0.4, -0.1, 0.8])
        assert (student.STEP_COST, student.GOAL_REWARD, student.corridor) == (-0.05, 0.9, corridor)
        assert student.dp_return(theta, 8) == exact.dp_return(theta, 8, corridor=corridor)
        assert student.dp_return(theta, 8, start_cells=(0,)) == exact.dp_return(theta, 8, start_cells=(0,), corridor=corridor)
        np.testing.assert_array_equal(student.exact_gradient(theta, 5), exact.exact_gradient(theta, 5, corridor=corridor))
        assert student.best_return() == pytest.approx(0.9 - 0.075)
        assert student.progress(0.9, corridor=student.DEFAULT) == exact.progress(0.9)
        assert student.surrogate_loss is exact.surrogate_loss and student.GOAL == exact.GOAL

    def test_the_defaults_where_a_student_has_none(self):
        """Parameters without rewards (variants off, or an assignment.toml without them): the
        defaults, the module's own answers."""
        student = exact.for_parameters({"seed": 11, "clip": 0.2})
        assert student.corridor == exact.DEFAULT and student.STEP_COST == exact.STEP_COST == -0.01
        assert student.dp_return(np.zeros(3), 8) == exact.dp_return(np.zeros(3), 8) == pytest.approx(0.466875)

    def test_the_horizon_exercise_keeps_the_default_rewards(self):
        student = exact.for_parameters({"step_cost": -0.05, "goal_reward": 1.2})
        for climb_cost in (0.3, 0.5325, 0.62):
            np.testing.assert_array_equal(student.finite_horizon(climb_cost, 12)[0],
                                          exact.finite_horizon(climb_cost, 12)[0])
        assert student.flip_horizon(0.5325, 12) == 7


@pytest.fixture(scope="module")
def reference():
    return load_solution(ROOT, "ps1", "reference")


class TestAgainstReference:
    """The JAX reference (float32) and the float64 oracle agree within float32 precision."""

    @pytest.mark.parametrize("horizon", [1, 4, 12])
    def test_exact_return(self, reference, horizon):
        import jax.numpy as jnp

        theta = np.random.default_rng(horizon).normal(0, 1.5, 3)
        assert float(reference.exact_return(jnp.asarray(theta), horizon)) == pytest.approx(
            exact.dp_return(theta, horizon), abs=2e-6)

    @pytest.mark.parametrize("method, clip", [("reinforce", 0.2), ("ppo", 0.1), ("ppo", 0.3)])
    def test_policy_loss_and_gradient(self, reference, method, clip):
        import jax
        import jax.numpy as jnp

        theta, records = off_policy_batch(11)
        as_jax = {key: jnp.asarray(value) for key, value in records.items()}
        value, grad = jax.value_and_grad(reference.policy_loss)(jnp.asarray(theta, jnp.float32), as_jax, method, clip)
        assert float(value) == pytest.approx(exact.surrogate_loss(theta, records, method, clip), abs=1e-5)
        np.testing.assert_allclose(grad, exact.surrogate_gradient(theta, records, method, clip), atol=1e-5)

    def test_sampled_records_have_the_rollouts_layout(self, reference):
        import jax

        _, records = reference.rollout(jax.numpy.zeros(3), jax.random.key(0), 16, 5)
        ours = exact.sample_episodes(np.zeros(3), 5, 16, np.random.default_rng(0))
        assert set(ours) == set(records)
        for key in records:
            assert ours[key].shape == records[key].shape and ours[key].dtype.kind == np.asarray(records[key]).dtype.kind


REFERENCE_CURVES = ROOT / "graders" / "ps1" / "reference_curves.json"


def allowed_rewards() -> list:
    """Every pair of rewards a student can get (graders/ps1/assignment.toml), defaults first."""
    from rlcourse.course.directory import Course

    parameters = {p.name: p for p in Course(ROOT).assignment("ps1").variants.parameters}
    pairs = [exact.Corridor(s, g) for s in parameters["step_cost"].choices for g in parameters["goal_reward"].choices]
    return sorted(pairs, key=lambda corridor: corridor != exact.DEFAULT)


def reference_training(corridor, seed=0) -> dict:
    """The reference's training curves (exact return after each update) with these rewards:
    solutions/ps1/reference.py loaded afresh with its STEP_COST and GOAL_REWARD set as the
    notebook's environment cell sets them from PARAMS, before anything is traced."""
    from rlcourse.course.solutions import load_course_module

    module = load_course_module(ROOT / "solutions" / "ps1" / "reference.py",
                                f"ps1_reference_{corridor.step_cost}_{corridor.goal_reward}")
    module.STEP_COST, module.GOAL_REWARD = corridor.step_cost, corridor.goal_reward
    curves = {"step_cost": corridor.step_cost, "goal_reward": corridor.goal_reward}
    for method, epochs in (("reinforce", 1), ("ppo", 3)):
        _, history = module.train(seed=seed, method=method, epochs=epochs)
        curves[method] = [float(value) for value in np.asarray(history)]
    return curves


def write_reference_curves() -> None:
    """Writes graders/ps1/reference_curves.json (`python tests/solutions/test_ps1_exact.py`)."""
    import json

    stored = {"about": "Exact return after each update of the reference training from seed 0 "
                       "(solutions/ps1/reference.py, JAX's default PRNG), for every pair of rewards "
                       "a student can have; tests/solutions/test_ps1_exact.py recomputes some and "
                       "rewrites them all when run as a script.",
              "seed": 0, "curves": [reference_training(corridor) for corridor in allowed_rewards()]}
    REFERENCE_CURVES.write_text(json.dumps(stored, indent=1) + "\n")


def test_stored_reference_curves_cover_every_pair_a_student_can_have():
    import json

    stored = json.loads(REFERENCE_CURVES.read_text())
    pairs = [exact.Corridor(entry["step_cost"], entry["goal_reward"]) for entry in stored["curves"]]
    assert pairs == allowed_rewards()
    for entry, corridor in zip(stored["curves"], pairs):
        for method in ("reinforce", "ppo"):
            assert len(entry[method]) == 41
            assert entry[method][0] == pytest.approx(exact.uniform_return(corridor=corridor), abs=1e-6)


@pytest.mark.parametrize("pair", [0, -1], ids=["defaults", "last allowed pair"])
def test_stored_reference_curves_are_what_the_reference_trains(pair):
    """graders/ps1/reference_curves.json (drawn in feedback) is the reference's own training: the
    defaults' curves (whose last values are the notebook's 0.9521624 and 0.97578394) and another
    pair's; every pair is written by the same function."""
    import json

    pytest.importorskip("jax")
    entry = json.loads(REFERENCE_CURVES.read_text())["curves"][pair]
    fresh = reference_training(exact.Corridor(entry["step_cost"], entry["goal_reward"]))
    for method in ("reinforce", "ppo"):
        np.testing.assert_allclose(entry[method], fresh[method], atol=1e-6)
    if pair == 0:
        assert (round(entry["reinforce"][-1], 7), round(entry["ppo"][-1], 8)) == (0.9521624, 0.97578394)


if __name__ == "__main__":
    write_reference_curves()
