"""ps1 reference solution: REINFORCE and the clipped objective on a four-cell corridor (JAX).

This file is the readable answer key for every TODO in `source/ps1/ps1.ipynb`, together with the code
the notebook gives students. The hidden graders use it as a *second* check only: every graded value
is first compared with the independent float64 oracle in `solutions/ps1/exact.py`.

The corridor: cells 0..3, an episode starts in cell 0 or 1 with equal probability, cell 3 is the
goal (terminated, reward GOAL_REWARD), every other live step earns STEP_COST, and an episode that
has taken `horizon` steps without reaching the goal is truncated. Finished episodes stay put and
earn nothing. The rewards, like the exercises' seed and clip, are each student's own (PARAMS);
this file has the defaults.
"""
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

PARAMS = {"seed": 11, "clip": 0.2, "step_cost": -0.01, "goal_reward": 1.0}
"""The defaults of graders/ps1/assignment.toml's [variants]; the notebook's locked cell
`given_parameters` gives each student their own."""

GOAL = 3
STEP_COST = PARAMS["step_cost"]
GOAL_REWARD = PARAMS["goal_reward"]


class State(NamedTuple):
    """One corridor episode: where it is, how many steps it has taken, and whether it has ended."""

    position: jax.Array
    elapsed: jax.Array
    done: jax.Array


def reset(key):
    """Start in cell 0 or cell 1 with probability 1/2 each."""
    return State(jax.random.randint(key, (), 0, 2), jnp.int32(0), jnp.bool_(False))


def step(state, action, horizon=8, rewards=None):
    """Move left (action 0) or right (action 1); report termination and truncation separately.

    A finished episode is absorbing: it keeps its position and earns no reward and no new event,
    so a batch of episodes can be stepped in lockstep without resets. `rewards` is (step cost,
    goal reward): STEP_COST and GOAL_REWARD when left out.
    """
    live = ~state.done
    moved = jnp.clip(state.position + 2 * action - 1, 0, GOAL)
    position = jnp.where(live, moved, state.position)
    elapsed = state.elapsed + live.astype(jnp.int32)
    terminated = live & (position == GOAL)
    truncated = live & ~terminated & (elapsed >= horizon)
    step_cost, goal_reward = (STEP_COST, GOAL_REWARD) if rewards is None else rewards
    reward = jnp.where(live, jnp.where(terminated, goal_reward, step_cost), 0.0)
    done = state.done | terminated | truncated
    return State(position, elapsed, done), reward, terminated, truncated


def log_probability(theta, observations, actions):
    """log pi(action | cell) for the Bernoulli policy with one logit per non-goal cell."""
    logits = theta[jnp.minimum(observations, 2)]
    return jnp.where(actions == 1, jax.nn.log_sigmoid(logits), jax.nn.log_sigmoid(-logits))


def rollout(theta, key, batch_size=256, horizon=8):
    """Sample `batch_size` episodes; every record has shape [horizon, batch_size].

    `old_logp` is the behaviour policy's log-probability of each sampled action, stored at
    collection time so that later updates can compare against the policy that collected the data.
    """
    # Your rewards go in as numbers rather than being built into the compiled program,
    # so one program serves every pair of rewards.
    return _rollout(theta, key, jnp.array([STEP_COST, GOAL_REWARD]), batch_size, horizon)


@partial(jax.jit, static_argnames=("batch_size", "horizon"))
def _rollout(theta, key, rewards, batch_size, horizon):
    reset_key, action_key = jax.random.split(key)
    start = jax.vmap(reset)(jax.random.split(reset_key, batch_size))

    def advance(states, time_key):
        observation = states.position
        p_right = jax.nn.sigmoid(theta[jnp.minimum(observation, 2)])
        # One key per episode (not one for the whole batch): this fixes the random stream that
        # the course's recorded figures (0.9521624, 0.97578394, ...) were produced with.
        episode_keys = jax.random.split(time_key, batch_size)
        action = jax.vmap(jax.random.bernoulli)(episode_keys, p_right).astype(jnp.int32)
        next_states, reward, terminated, truncated = jax.vmap(
            lambda s, a: step(s, a, horizon, rewards))(states, action)
        record = dict(observation=observation, action=action, reward=reward,
                      active=~states.done, terminated=terminated, truncated=truncated,
                      old_logp=log_probability(theta, observation, action))
        return next_states, record

    return jax.lax.scan(advance, start, jax.random.split(action_key, horizon))


# --- TODO 1: reward-to-go -------------------------------------------------------------------
def returns_to_go(rewards):
    """G_t = r_t + r_{t+1} + ... for each episode (undiscounted); rewards are [horizon, batch]."""
    return jnp.flip(jnp.cumsum(jnp.flip(rewards, axis=0), axis=0), axis=0)


# --- TODO 2: the policy objective -----------------------------------------------------------
def policy_loss(theta, records, method="ppo", clip=0.2):
    """Negative policy objective per *episode* for REINFORCE or the clipped surrogate.

    The targets (reward-to-go) and the behaviour log-probabilities are data, not functions of
    theta: both sit behind stop_gradient. Live steps are summed and divided by the number of
    episodes in the batch, because the objective we promise to improve is return per episode.
    """
    target = jax.lax.stop_gradient(returns_to_go(records["reward"]))
    behaviour_logp = jax.lax.stop_gradient(records["old_logp"])
    logp = log_probability(theta, records["observation"], records["action"])
    if method == "reinforce":
        per_step = logp * target
    elif method == "ppo":
        ratio = jnp.exp(logp - behaviour_logp)
        clipped = jnp.clip(ratio, 1.0 - clip, 1.0 + clip)
        per_step = jnp.minimum(ratio * target, clipped * target)
    else:
        raise ValueError("method must be 'reinforce' or 'ppo'")
    episodes = records["reward"].shape[1]
    return -jnp.sum(jnp.where(records["active"], per_step, 0.0)) / episodes


# --- TODO 3: exact expected return by dynamic programming -----------------------------------
@partial(jax.jit, static_argnames=("horizon",))
def exact_return(theta, horizon=8):
    """Expected episode return of the policy, computed by backing up values `horizon` times.

    values[c] is the expected return still to come from cell c with k steps left; the goal cell
    is absorbing and worth 0. The start distribution is uniform over cells 0 and 1.
    """
    p_right = jax.nn.sigmoid(theta)
    cells = jnp.arange(3)
    left_of = jnp.maximum(cells - 1, 0)
    right_of = cells + 1

    def one_more_step(_, values):
        go_left = STEP_COST + values[left_of]
        go_right = jnp.where(right_of == GOAL, GOAL_REWARD, STEP_COST + values[right_of])
        live = (1.0 - p_right) * go_left + p_right * go_right
        return jnp.append(live, 0.0)

    values = jax.lax.fori_loop(0, horizon, one_more_step, jnp.zeros(4))
    return 0.5 * (values[0] + values[1])


# --- given: the training loop ----------------------------------------------------------------
@partial(jax.jit, static_argnames=("horizon", "method", "epochs"))
def _update(theta, records, horizon, method, epochs, learning_rate):
    """`epochs` gradient steps on one batch, then the exact return of the updated logits."""
    def one_epoch(_, candidate):
        return candidate - learning_rate * jax.grad(policy_loss)(candidate, records, method)

    theta = jax.lax.fori_loop(0, epochs, one_epoch, theta)
    return theta, exact_return(theta, horizon)


def train(seed=0, updates=40, batch_size=256, horizon=8, method="ppo", epochs=3, learning_rate=0.5):
    """Train from zero logits; return the final logits and the exact return after each update."""
    if updates < 1 or batch_size < 1 or horizon < 1 or epochs < 1 or learning_rate <= 0:
        raise ValueError("updates, batch_size, horizon, epochs and learning_rate must be positive")
    if method not in ("ppo", "reinforce"):
        raise ValueError("method must be 'reinforce' or 'ppo'")
    if method == "reinforce" and epochs != 1:
        raise ValueError("REINFORCE takes exactly one step per fresh on-policy batch (epochs=1)")
    # A Python loop over compiled steps, as CleanRL's JAX agents are written: collecting a batch
    # is one compiled call and each update another.
    key, theta = jax.random.key(seed), jnp.zeros(3)
    history = [exact_return(theta, horizon)]
    for _ in range(updates):
        key, sample_key = jax.random.split(key)
        _, records = rollout(theta, sample_key, batch_size, horizon)
        theta, value = _update(theta, records, horizon, method, epochs, learning_rate)
        history.append(value)
    return theta, jnp.stack(history)


# --- exercises --------------------------------------------------------------------------------
def exercises():
    """The notebook's exercise answers, computed from the functions above."""
    theta_pg, _ = train(seed=0, method="reinforce", epochs=1)
    other_theta, other_history = train(seed=PARAMS["seed"], method="reinforce", epochs=1)

    _, b = rollout(jnp.zeros(3), jax.random.key(77), 128, 8)
    old = b["old_logp"]
    ratios = jnp.exp(log_probability(jnp.ones(3), b["observation"], b["action"]) - old)
    old_grad = jax.grad(lambda lp: policy_loss(jnp.ones(3), dict(b, old_logp=lp)))(old)

    short = exact_return(jnp.full(3, 100.0), horizon=2)

    ratio, eps = jnp.array([0.6, 1.0, 1.4]), PARAMS["clip"]
    positive = jnp.minimum(ratio * 1.0, jnp.clip(ratio, 1 - eps, 1 + eps) * 1.0)
    negative = jnp.minimum(ratio * -1.0, jnp.clip(ratio, 1 - eps, 1 + eps) * -1.0)

    z = jnp.array([-0.2, 0.3, 0.7])
    _, batch = rollout(z, jax.random.key(902), 32768, 8)
    sampled = -jax.grad(policy_loss)(z, batch, "reinforce")
    exact = jax.grad(exact_return)(z)
    return dict(theta_pg=theta_pg, other_theta=other_theta, other_history=other_history, b=b,
                old=old, ratios=ratios, old_grad=old_grad, short=short, positive=positive,
                negative=negative, sampled=sampled, exact=exact)
