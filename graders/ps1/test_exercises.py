"""The notebook's exercises, read back as variables and checked against exact values."""
from functools import partial

import numpy as np

from rlcourse.grading.rubric import (Failure, as_array, close, expect_close, fmt, item, negated,
                                     on_student_data)

TYPED_DEFAULTS = "default_values_not_params"
FIX_TYPED_REWARDS = ("use STEP_COST and GOAL_REWARD (your own, from PARAMS) for every reward "
                     "exact_return adds up, never the default numbers typed in")
SAMPLED_TOL = dict(rtol=1e-3, atol=1e-5)
"""A float32 gradient over exercise 5's 32768 episodes against the float64 one on the same batch:
correct forms land within half of it."""


@item(1, cell="test_exercise_changed_seed", title="REINFORCE from another seed")
def test_changed_seed(student, exact, models, explain, params, default_params, given_loop):
    values = student.get("other_theta", "other_history", "theta_pg")
    theta = as_array(values["other_theta"], what="other_theta", shape=(3,))
    history = as_array(values["other_history"], what="other_history")
    if history.ndim != 1 or history.size < 2:
        raise Failure("bad_output", did=f"other_history has shape {history.shape}",
                      should="it should be the history train returns: one exact return per update, "
                             "starting with the untrained policy")
    with on_student_data("other_theta"):
        final = exact.dp_return(theta, 8)
    # 0.9 and a gain of 0.35 with the default rewards; with the student's own, the same shares of
    # the way from the uniform policy's return to the best one, as the notebook's check asks.
    uniform, default_uniform = exact.uniform_return(), exact.uniform_return(corridor=exact.DEFAULT)
    scale = (exact.best_return() - uniform) / (exact.best_return(corridor=exact.DEFAULT) - default_uniform)
    good, gain = uniform + (0.9 - default_uniform) * scale, 0.35 * scale
    if not (final > good and history[-1] > history[0] + gain):
        raise Failure("training_not_improving",
                      did=f"the run went from {fmt(history[0], 4)} to an exact return of {fmt(final, 4)}",
                      should=f"REINFORCE from another seed should still end above {fmt(good, 4)}, "
                             f"{fmt(gain, 4)} or more above where it started (0.9 and 0.35 with the "
                             "default rewards)",
                      see="plot other_history.")
    expect_close(history[-1], final, what="the last entry of other_history (the exact return "
                 "of other_theta by your exact_return)", rtol=1e-4, atol=1e-5,
                 # nearest first: at a trained, nearly deterministic policy several bug models
                 # lie within the tolerance of each other, and the nearest explains the value
                 models=sorted(models.exact_return(theta, 8), key=lambda model: abs(model[1] - history[-1])),
                 explain=explain,
                 see={"*": "print exact_return(other_theta) beside other_history[-1]: they are "
                           "equal when both come from one run, and then a wrong value is "
                           "exact_return's (see its items).",
                      TYPED_DEFAULTS: models.typed_defaults_see()},
                 fix={"*": "take other_theta and other_history from one and the same train(...) call, "
                           "and make exact_return right.",
                      TYPED_DEFAULTS: FIX_TYPED_REWARDS})
    if np.allclose(theta, as_array(values["theta_pg"], what="theta_pg", shape=(3,))):
        raise Failure("wrong_value", did="other_theta equals theta_pg from the seed-0 run",
                      should="train with a different seed, so that the parameters differ",
                      see="print(other_theta, theta_pg).")
    seed = params["seed"]  # the student's own seed: a run copied from a classmate used theirs
    own, _ = student.call("train", seed=seed, method="reinforce", epochs=1)
    if not np.allclose(theta, as_array(own, what=f"train(seed={seed}) theta", shape=(3,)),
                       rtol=1e-5, atol=1e-6):
        typed_in = default_params["seed"]
        if typed_in != seed:
            printed, _ = student.call("train", seed=typed_in, method="reinforce", epochs=1)
            if np.allclose(theta, as_array(printed, what=f"train(seed={typed_in}) theta", shape=(3,)),
                           rtol=1e-5, atol=1e-6):
                raise Failure(TYPED_DEFAULTS,
                              did=f"other_theta is where REINFORCE training from seed {typed_in} ends: "
                                  f"the default seed, printed when no student id is set, not yours",
                              should=f"train from your own seed, PARAMS['seed'] = {seed}",
                              see="print PARAMS: it holds your own values only when Jupyter was "
                                  "started with your student id.",
                              fix="pass seed=PARAMS['seed'] to train instead of a number typed in.")
        raise Failure("wrong_value", did=f"other_theta is not where REINFORCE training (one step per "
                      f"batch) from your seed {seed} ends",
                      should=f"train from your own seed, PARAMS['seed'] = {seed}",
                      see="print PARAMS['seed'] beside the seed, method and epochs your train(...) call uses.",
                      fix="train with your own seed, train(seed=PARAMS['seed'], method='reinforce', "
                          "epochs=1), and keep both of what it returns as other_theta and other_history.")
    # The run above is the notebook's own `train`, inside which a loss can tell it is training;
    # the grader's replay of the same loop (conftest.py) asks the loss as every item does.
    replayed = given_loop.train(seed, method="reinforce", epochs=1)
    with on_student_data(f"the logits training from your seed {seed} ended on"):
        replayed_return = exact.dp_return(replayed, 8)
    if not replayed_return > good:
        raise Failure("training_not_improving",
                      did=f"REINFORCE training from your seed {seed}, run by the grader with your "
                          f"policy_loss, ended at an exact return of {fmt(replayed_return, 4)}, though "
                          f"your other_theta reaches {fmt(final, 4)}",
                      should=f"the same training should end above {fmt(good, 4)} however it is run: "
                             "a loss must be the same function inside train as anywhere else",
                      see="call policy_loss on one of train's batches inside and outside train and "
                          "compare; then check the policy_loss items above.")


@item(2, cell="test_exercise_frozen_reference", title="frozen behaviour reference")
def test_frozen_reference(student, exact, explain, records_of):
    values = student.get("b", "old", "ratios", "old_grad")
    batch = records_of(values["b"], what="b", keys=("observation", "action", "old_logp"))
    stored = batch["old_logp"]
    old = as_array(values["old"], what="old", shape=stored.shape)
    with on_student_data("b"):
        behaviour = exact.log_pi(np.zeros(3), batch["observation"], batch["action"])
        new = exact.log_pi(np.ones(3), batch["observation"], batch["action"])
    expect_close(old, behaviour,
                 what="old (the stored behaviour log-probabilities)", rtol=1e-5, atol=1e-6,
                 see="at zero logits every action has probability 1/2, so old should be log(0.5) everywhere.")
    ratios = as_array(values["ratios"], what="ratios", shape=stored.shape)
    expect_close(ratios, np.exp(new - old), what="ratios", rtol=1e-4, atol=1e-5,
                 models={"ratio_inverted": np.exp(old - new)}, explain=explain,
                 see="print the ratio of a step that moved right and of one that moved left: under "
                     "theta = (1, 1, 1) a right move has probability sigmoid(1) = 0.731 against the "
                     "behaviour policy's 0.5, a ratio of 1.46, and a left move 0.269 / 0.5 = 0.54.",
                 fix="compute the ratios from log-probabilities: exp(log-probabilities of the recorded "
                     "actions under jnp.ones(3) minus old).")
    old_grad = as_array(values["old_grad"], what="old_grad", shape=stored.shape)
    if np.any(old_grad != 0):
        raise Failure("old_logp_not_frozen",
                      did=f"old_grad has non-zero entries (largest {fmt(np.max(np.abs(old_grad)))})",
                      should="no gradient may flow into the stored behaviour log-probabilities",
                      see="part 3 of policy_loss's visible checks asks the same of policy_loss: run it, "
                          "and print where old_grad is non-zero.",
                      fix="use jax.lax.stop_gradient(records['old_logp']) in policy_loss.")
    # old_grad is a variable the notebook sets: the grader takes the same gradient itself, of the
    # same loss at the same point (jnp.ones(3) on b), through the call every item makes.
    _, own = student.value_and_grad("policy_loss", np.ones(3, dtype=np.float32), values["b"],
                                    wrt=("records", "old_logp"), compiled=True)
    own = as_array(own, what="the gradient of policy_loss(jnp.ones(3), b) with respect to b['old_logp']",
                   shape=stored.shape)
    if np.any(own != 0):
        raise Failure("old_logp_not_frozen",
                      did=f"old_grad is all zeros, but the gradient of your policy_loss(jnp.ones(3), b) "
                          f"with respect to b['old_logp'] is not (largest {fmt(np.max(np.abs(own)))})",
                      should="no gradient may flow into the stored behaviour log-probabilities, and "
                             "old_grad should be that gradient, as jax.grad of your policy_loss gives it",
                      see="part 3 of policy_loss's visible checks differentiates the loss with respect to "
                          "old_logp: that gradient should be all zeros.",
                      fix="use jax.lax.stop_gradient(records['old_logp']) in policy_loss, and compute "
                          "old_grad with jax.grad of it.")


@item(1, cell="test_exercise_horizon", title="the always-right policy with horizon 2",
      kind="value")
def test_horizon_change(student, exact, models, explain):
    short = as_array(student.get("short")["short"], what="short", shape=())
    theta = np.full(3, 100.0)
    expect_close(short, exact.dp_return(theta, 2), what="short", rtol=1e-5, atol=1e-6,
                 models=models.exact_return(theta, 2) + [("wrong_value", exact.dp_return(theta, 8))],
                 explain=explain,
                 see=f"from cell 0 two steps right earn two step costs ({2 * exact.STEP_COST:g}); from "
                     f"cell 1 they reach the goal for {exact.STEP_COST + exact.GOAL_REWARD:g}.",
                 fix={TYPED_DEFAULTS: FIX_TYPED_REWARDS})


@item(1, cell="test_exercise_clipping_signs", title="clipped objective on both advantage signs",
      kind="value")
def test_clipping_signs(student, exact, explain, params, default_params):
    values = student.get("positive", "negative")
    ratio, eps, typed_in = np.array([0.6, 1.0, 1.4]), params["clip"], default_params["clip"]
    explain = {**explain, TYPED_DEFAULTS: f"the default eps = {typed_in:g} in place of your "
                                          f"PARAMS['clip'] = {eps:g}"}
    for name, advantage in (("positive", 1.0), ("negative", -1.0)):
        clipped = np.clip(ratio, 1 - eps, 1 + eps) * advantage
        expect_close(as_array(values[name], what=name, shape=(3,)),
                     exact.clipped_objective(ratio, advantage, eps), what=name,
                     models={"clip_without_min": clipped,
                             "max_instead_of_min": np.maximum(ratio * advantage, clipped),
                             TYPED_DEFAULTS: exact.clipped_objective(ratio, advantage, typed_in)},
                     explain=explain, rtol=1e-5, atol=1e-6,
                     see=f"work the three entries out by hand with your eps = PARAMS['clip'] = {eps}: "
                         "at r = 0.6 and at r = 1.4, which of r * A and clip(r, 1 - eps, 1 + eps) * A is "
                         "the smaller, for A = +1 and for A = -1?",
                     fix=f"for each ratio take min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A) "
                         f"with your eps = PARAMS['clip'] = {eps}.")


@item(1, cell="test_exercise_sampled_vs_exact", title="sampled against exact gradient")
def test_sampled_vs_exact(student, exact, models, explain, records_of):
    """`exact` must be grad J exactly; `sampled` must be minus the REINFORCE loss gradient on the
    notebook's own batch (checked exactly on that batch), and agree with grad J within the
    sampling tolerance the notebook states."""
    values = student.get("sampled", "exact", "batch", "z")
    z = as_array(values["z"], what="z", shape=(3,))
    truth = exact.exact_gradient(z, 8)
    exact_value = as_array(values["exact"], what="exact", shape=(3,))
    expect_close(exact_value, truth, what="exact", rtol=1e-4, atol=1e-5,
                 models=partial(lambda truth, z: [("loss_sign", -truth)] + models.exact_return_gradients(z, 8),
                                truth, z),
                 explain=explain,
                 see={"*": "compare exact with central differences of your exact_return at z, "
                           "(exact_return(z + h e_i) - exact_return(z - h e_i)) / (2h) for each logit "
                           "i with h = 1e-3: exact is the gradient of the return itself, so the two "
                           "should agree.",
                      TYPED_DEFAULTS: models.typed_defaults_see()},
                 fix={"*": "take jax.grad of exact_return and evaluate it at z.",
                      TYPED_DEFAULTS: FIX_TYPED_REWARDS})
    batch = records_of(values["batch"], what="batch",
                       keys=("observation", "action", "reward", "active", "old_logp"))
    with on_student_data("batch"):
        on_batch = -exact.surrogate_gradient(z, batch, "reinforce")
    sampled = as_array(values["sampled"], what="sampled", shape=(3,))
    if not close(sampled, on_batch, **SAMPLED_TOL):
        # Crediting each action with the whole episode's return is a REINFORCE estimate too
        # (unbiased: earlier rewards do not depend on later actions). On this batch it differs
        # from the reward-to-go form only by the step costs paid before each step, about the
        # float32 noise with a step cost of -0.01 and past it with -0.05, so whether it passed
        # would depend on the student's rewards: it is accepted at every one (returns_to_go's and
        # policy_loss's items catch it).
        with on_student_data("batch"):
            whole_returns = -models.loss_gradient(z, batch, "reinforce", 0.2, "returns_not_reward_to_go")
        if close(sampled, whole_returns, **SAMPLED_TOL):
            on_batch = whole_returns
    expect_close(sampled, on_batch, what="sampled", **SAMPLED_TOL,
                 models=partial(negated, models.loss_gradients, z, batch, "reinforce", 0.2),
                 explain=explain,
                 see="print sampled beside exact: both are the gradient of the expected return, sampled "
                     "estimated from the batch, so on 32768 episodes they should agree in sign and "
                     "within the sampling noise (atol 0.012, rtol 0.04).",
                 fix="take jax.grad of policy_loss at z on the batch with method 'reinforce', and "
                     "negate it: the minus sign turns the loss gradient into the objective's.")
    if np.array_equal(sampled, exact_value) or not np.allclose(sampled, truth, rtol=0.04, atol=0.012):
        raise Failure("wrong_value", did=f"sampled is {fmt(sampled)} against exact {fmt(truth)}",
                      should="sampled must come from the sampled batch, and on 32768 episodes it "
                             "agrees with the exact gradient within atol 0.012, rtol 0.04",
                      see="print sampled and exact side by side: an estimate from the batch carries "
                          "sampling noise, so it is close to exact but not equal to it digit for digit.",
                      fix="compute sampled from the batch: minus jax.grad of policy_loss at z on the "
                          "batch, with method 'reinforce'.")
