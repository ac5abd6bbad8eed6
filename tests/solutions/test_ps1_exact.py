"""The ps1 oracle: each fast path agrees with an obviously correct slow one, and with the
JAX reference solution (the second check)."""
import numpy as np
import pytest

from rlcourse.course.solutions import load_solution

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
exact = load_solution(ROOT, "ps1", "exact")


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
    def test_dp_equals_enumeration_of_every_episode(self, horizon):
        theta = np.random.default_rng(horizon).normal(0, 1.5, 3)
        assert exact.dp_return(theta, horizon) == pytest.approx(exact.enumerated_return(theta, horizon), abs=1e-12)

    @pytest.mark.parametrize("horizon", [1, 3, 8])
    def test_enumerated_probabilities_sum_to_one(self, horizon):
        _, probability = exact.enumerate_episodes(np.array([0.3, -1.0, 2.0]), horizon)
        assert probability.sum() == pytest.approx(1.0, abs=1e-12)


class TestGradients:
    @pytest.mark.parametrize("horizon", [2, 5, 8])
    def test_exact_gradient_is_the_derivative_of_the_return(self, horizon):
        theta = np.random.default_rng(7 + horizon).normal(0, 1, 3)
        numeric = finite_difference(lambda t: exact.dp_return(t, horizon), theta)
        np.testing.assert_allclose(exact.exact_gradient(theta, horizon), numeric, atol=1e-8)

    @pytest.mark.parametrize("method, clip", [("reinforce", 0.2), ("ppo", 0.1), ("ppo", 0.3)])
    def test_closed_form_loss_gradient_matches_finite_differences(self, method, clip):
        theta, records = off_policy_batch(3)
        numeric = finite_difference(lambda t: exact.surrogate_loss(t, records, method, clip), theta)
        np.testing.assert_allclose(exact.surrogate_gradient(theta, records, method, clip), numeric, atol=1e-7)

    def test_reinforce_gradient_over_weighted_episodes_is_minus_exact_gradient(self):
        """The identity the REINFORCE grader relies on: rewards scaled by n * P(episode)."""
        theta = np.array([-0.2, 0.3, 0.7])
        records, probability = exact.enumerate_episodes(theta, 6)
        records["reward"] = records["reward"] * (probability.size * probability)[None, :]
        np.testing.assert_allclose(-exact.surrogate_gradient(theta, records, "reinforce"),
                                   exact.exact_gradient(theta, 6), atol=1e-12)


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


def test_stored_reference_curves_are_what_the_reference_trains(reference):
    """graders/ps1/reference_curves.json (drawn in feedback) is the reference's own training."""
    import json

    stored = json.loads((ROOT / "graders" / "ps1" / "reference_curves.json").read_text())
    for method, epochs in (("reinforce", 1), ("ppo", 3)):
        _, history = reference.train(seed=stored["seed"], method=method, epochs=epochs)
        np.testing.assert_allclose(stored[method], np.asarray(history), atol=1e-6)
