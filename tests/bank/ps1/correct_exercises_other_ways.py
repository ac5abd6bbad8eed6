"""The exercises answered in other correct ways: must get full marks.

* Exercise 1 trains REINFORCE from the student's own seed with every argument spelled out, the
  seed read into a variable of its own first.
* Exercise 2: `old` is a copy of the stored array; `ratios` divides the two probabilities
  (`exp(new) / exp(old)`, mathematically the same ratio, equal to float32 rounding since the
  probabilities are far from 0); `old_grad` differentiates through `{**b, 'old_logp': lp}`
  at `b['old_logp']`.
* Exercise 3 converts the result to a Python float and passes the horizon positionally
  (`static_argnames` still applies to a positional argument).
* Exercise 4 computes min(r*A, clip(r)*A) in a Python list comprehension with builtin min/max,
  with epsilon taken from PARAMS under another name.
* Exercise 5 takes the exact gradient with `jax.jacrev` (for a scalar function it is the
  gradient) and the sampled one by differentiating minus the loss.
* Exercise 6 builds a float64 NumPy table of both moves' values, shape [2, 3] (move, cell), takes
  the max and the argmax over the moves (axis 0; argmax keeps the first, left, on a tie) and
  returns NumPy arrays; the prediction is an annotated assignment with a comment, and the
  concept answers are capital letters with spaces around them.
"""
CELLS = {
    "exercise_changed_seed": '''my_seed = int(PARAMS["seed"])
other_theta, other_history = train(seed=my_seed, updates=40, batch_size=256, horizon=8,
                                   method='reinforce', epochs=1, learning_rate=0.5)
print(other_history[0], other_history[-1])
''',
    "exercise_frozen_reference": '''_, b = rollout(jnp.zeros(3), jax.random.key(77), 128, 8)
old = jnp.array(b['old_logp'], copy=True)
newlog = log_probability(jnp.ones(3), b['observation'], b['action'])
ratios = jnp.exp(newlog) / jnp.exp(old)
old_grad = jax.grad(lambda lp: policy_loss(jnp.ones(3), {**b, 'old_logp': lp}))(b['old_logp'])
''',
    "exercise_horizon": '''short = float(exact_return(jnp.full(3, 100.0), 2))
print(short)
''',
    "exercise_clipping_signs": '''ratio = jnp.array([0.6, 1.0, 1.4])
epsilon = PARAMS.get("clip")
def clipped_objective(r, advantage):
    return min(r * advantage, min(max(r, 1 - epsilon), 1 + epsilon) * advantage)
positive = jnp.array([clipped_objective(float(r), 1.0) for r in ratio])
negative = jnp.array([clipped_objective(float(r), -1.0) for r in ratio])
''',
    "exercise_sampled_vs_exact": '''z = jnp.array([-0.2, 0.3, 0.7])
_, batch = rollout(z, jax.random.key(902), 32768, 8)
sampled = jax.grad(lambda t: -policy_loss(t, batch, method='reinforce'))(z)
exact = jax.jacrev(exact_return)(z)
''',
    "finite_horizon_values": '''import numpy as np

CLIMB_COST = 0.5325
UPHILL_STEP_COST = -0.01
UPHILL_GOAL_REWARD = 1.0


def finite_horizon_values(climb_cost, max_horizon=12):
    values = np.zeros((max_horizon + 1, 4))
    actions = np.zeros((max_horizon + 1, 3), dtype=np.int64)
    for k in range(1, max_horizon + 1):
        before = values[k - 1]
        table = np.array([[-0.01 + before[0], -0.01 + before[0], -0.01 + before[1]],
                          [-climb_cost + before[1], -climb_cost + before[2], 1.0]])
        values[k, :3] = table.max(axis=0)
        actions[k] = table.argmax(axis=0)
    return values, actions
''',
    "predict_flip_horizon": "PREDICTED_FLIP_HORIZON: int = 7  # climbing nets 1 - 2c; waiting costs 0.01 a step\n",
    "concept_checks": 'Q1_ANSWER = " B "\nQ2_ANSWER = "A"\nQ3_ANSWER = "C"\nQ4_ANSWER = " b"\n',
}
LOSES = {}
