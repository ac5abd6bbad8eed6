"""ps3 reference solution: policy gradients from scratch in NumPy (one readable file).

The answers to the notebook's TODO functions, then the given code they plug into: CartPole with
separate `terminated` and `truncated`, the MLP container, Adam, and the three agents. This is the
source notebook's code, without its experiments and checks.
"""


# --- given: environment, network container, optimiser ----------------------------------------
import numpy as np


class CartPole:
    """The classic pole-balancing task, written in NumPy.

    Observation: [cart position, cart velocity, pole angle, pole angular velocity].
    Actions: 0 pushes the cart left, 1 pushes it right. Reward: 1 for every step.
    step(action) returns (observation, reward, terminated, truncated):
      terminated -- the pole fell past 12 degrees or the cart left [-2.4, 2.4]. The episode
                    really ended: there is no future reward, so the value after it is 0.
      truncated  -- the step limit was reached. The pole is still up; we only stopped watching.
                    The state after it still has a value, and an estimate should bootstrap from it.
    All randomness comes from the generator seeded in the constructor.
    """

    def __init__(self, seed=None, max_steps=200):
        self.rng = np.random.default_rng(seed)
        self.max_steps = max_steps
        self.state, self.steps = None, 0

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.steps = 0
        return self.state.copy()

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = np.cos(theta), np.sin(theta)
        # Cart mass 1.0, pole mass 0.1, pole half-length 0.5, gravity 9.8, time step 0.02 s.
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc,
                               theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc])
        self.steps += 1
        terminated = bool(abs(self.state[0]) > 2.4 or abs(self.state[2]) > 12 * np.pi / 180)
        truncated = (not terminated) and self.steps >= self.max_steps
        return self.state.copy(), 1.0, terminated, truncated


def init_mlp(rng, n_in, n_hidden, n_out, out_scale=1.0):
    """Parameters of a two-layer tanh MLP: a dict of float64 arrays
    W1 [n_in, n_hidden], b1 [n_hidden], W2 [n_hidden, n_out], b2 [n_out]."""
    return {"W1": rng.normal(0.0, 1.0 / np.sqrt(n_in), (n_in, n_hidden)), "b1": np.zeros(n_hidden),
            "W2": rng.normal(0.0, out_scale / np.sqrt(n_hidden), (n_hidden, n_out)), "b2": np.zeros(n_out)}


class Adam:
    """Adam on a dict of parameters, updated in place. It descends: pass it the gradient of a loss."""

    def __init__(self, params, lr, beta1=0.9, beta2=0.999, eps=1e-8):
        self.params, self.lr, self.beta1, self.beta2, self.eps = params, lr, beta1, beta2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, grads):
        self.t += 1
        for k, g in grads.items():
            self.m[k] = self.beta1 * self.m[k] + (1 - self.beta1) * g
            self.v[k] = self.beta2 * self.v[k] + (1 - self.beta2) * g * g
            m_hat = self.m[k] / (1 - self.beta1 ** self.t)
            v_hat = self.v[k] / (1 - self.beta2 ** self.t)
            self.params[k] -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


def mlp_gradients(params, x, grad_out):
    """Your forward and backward pass in one call: (out, gradients of sum(grad_out * out))."""
    out, cache = mlp_forward(params, x)
    return out, mlp_backward(params, cache, grad_out)


def sample_action(rng, probs):
    """One action drawn from the probabilities of one state (inverse CDF, one uniform draw)."""
    return int(np.searchsorted(np.cumsum(probs), rng.random() * probs.sum()))


def central_difference(f, x, step=1e-6):
    """Central finite differences of a scalar function f with respect to every entry of x."""
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += step
        down[index] -= step
        grad[index] = (f(up) - f(down)) / (2 * step)
    return grad


# --- the TODO functions ----------------------------------------------------------------------


def softmax(logits):
    """Probabilities along the last axis.

    logits: float array of any shape [..., A]. Returns an array of the same shape whose entries
    along the last axis are positive and sum to 1. Must stay finite for logits like +-1000.
    """
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def discounted_returns(rewards, gamma):
    """Reward-to-go of one episode.

    rewards: float array [T], the rewards of one episode in order; gamma: float in [0, 1].
    Returns G of shape [T] with G[t] = sum_{k >= t} gamma**(k - t) * rewards[k].
    """
    returns = np.zeros(len(rewards))
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def mlp_forward(params, x):
    """Forward pass of the two-layer tanh MLP.

    params: dict with W1 [n_in, H], b1 [H], W2 [H, n_out], b2 [n_out]; x: [B, n_in].
    Returns (out, cache): out of shape [B, n_out], and whatever mlp_backward needs.
    """
    pre = x @ params["W1"] + params["b1"]
    hidden = np.tanh(pre)
    out = hidden @ params["W2"] + params["b2"]
    return out, (x, hidden)


def mlp_backward(params, cache, grad_out):
    """Backward pass: grad_out [B, n_out] is dL/d(out).

    Returns a dict with the keys of params, each dL/d(parameter) with that parameter's shape.
    """
    x, hidden = cache
    grad_hidden = grad_out @ params["W2"].T
    grad_pre = grad_hidden * (1.0 - hidden ** 2)
    return {"W1": x.T @ grad_pre, "b1": grad_pre.sum(axis=0),
            "W2": hidden.T @ grad_out, "b2": grad_out.sum(axis=0)}


def reinforce_logit_grad(probs, actions, weights):
    """Gradient of L = -mean_i(weights[i] * log probs[i, actions[i]]) with respect to the logits.

    probs: [n, A] softmax probabilities (one row per step); actions: int array [n];
    weights: [n] (returns or advantages, treated as constants). Returns an array [n, A].
    """
    n = probs.shape[0]
    grad = probs.copy()
    grad[np.arange(n), actions] -= 1.0
    return grad * weights[:, None] / n


def td_advantage(rewards, values, next_values, terminated, gamma):
    """One-step TD advantages of a run of steps from one environment.

    rewards, values, next_values: float arrays [T] (values[t] = V(s_t), next_values[t] = V of the
    observation reached by step t); terminated: bool [T]; gamma: float.
    Returns [T]: r_t + gamma * V(s_{t+1}) - V(s_t), without the bootstrap term where terminated.
    """
    not_terminal = 1.0 - terminated.astype(np.float64)
    return rewards + gamma * not_terminal * next_values - values


def gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Generalised advantage estimates of a buffer of T steps from one environment.

    rewards, values, next_values: float [T]; terminated, truncated: bool [T] (an episode ends at
    step t when either is true; the next step starts a new episode); gamma, lam: floats.
    Returns advantages [T].
    """
    not_terminal = 1.0 - terminated.astype(np.float64)
    episode_goes_on = 1.0 - (terminated | truncated).astype(np.float64)
    deltas = rewards + gamma * not_terminal * next_values - values
    advantages = np.zeros(len(deltas))
    running = 0.0
    for t in reversed(range(len(deltas))):
        running = deltas[t] + gamma * lam * episode_goes_on[t] * running
        advantages[t] = running
    return advantages


def ppo_logit_grad(probs, old_probs, actions, advantages, eps=0.2):
    """Gradient of the clipped surrogate loss with respect to the logits.

    probs: [n, A] current probabilities; old_probs: [n, A] probabilities under the policy that
    collected the data (constants); actions: int [n]; advantages: [n] (constants); eps: float.
    Returns [n, A], the gradient of -mean(min(r * A, clip(r, 1 - eps, 1 + eps) * A)).
    """
    n = probs.shape[0]
    rows = np.arange(n)
    ratio = probs[rows, actions] / old_probs[rows, actions]
    clipped_is_chosen = ((advantages > 0) & (ratio > 1 + eps)) | ((advantages < 0) & (ratio < 1 - eps))
    scale = np.where(clipped_is_chosen, 0.0, advantages * ratio)
    grad = probs.copy()
    grad[rows, actions] -= 1.0
    return grad * scale[:, None] / n


# --- given: the agents -----------------------------------------------------------------------
def collect_steps(env, actor, rng, n_steps, obs, lengths):
    """n_steps transitions from one environment, across episode boundaries. Returns the batch
    and the observation to continue from; appends each finished episode's length to lengths."""
    batch = {key: [] for key in ("obs", "action", "probs", "reward", "next_obs", "terminated", "truncated")}
    for _ in range(n_steps):
        logits, _ = mlp_forward(actor, obs[None, :])
        probs = softmax(logits)[0]
        action = sample_action(rng, probs)
        next_obs, reward, terminated, truncated = env.step(action)
        for key, value in zip(batch, (obs, action, probs, reward, next_obs, terminated, truncated)):
            batch[key].append(value)
        obs = next_obs
        if terminated or truncated:
            lengths.append(env.steps)
            obs = env.reset()
    return {key: np.array(value) for key, value in batch.items()}, obs


def train(agent, seed=0, total_steps=20_000, lr=None, gamma=0.99, lam=0.95, standardise=True,
          hidden=32, env_factory=CartPole):
    """Train 'reinforce', 'a2c' or 'ppo' for about total_steps environment steps.
    Returns the length of every finished episode, in order (200 is the step limit)."""
    rng = np.random.default_rng(seed)
    env = env_factory(seed=seed + 1000)
    actor = init_mlp(rng, 4, hidden, 2, out_scale=0.1)
    critic = init_mlp(rng, 4, hidden, 1)
    lr = {"reinforce": 0.005, "a2c": 0.003, "ppo": 0.003}[agent] if lr is None else lr
    actor_opt, critic_opt = Adam(actor, lr), Adam(critic, lr)
    lengths, steps, obs = [], 0, env.reset()
    while steps < total_steps:
        if agent == "reinforce":
            # One whole episode per update.
            done_before = len(lengths)
            parts = []
            while len(lengths) == done_before:
                part, obs = collect_steps(env, actor, rng, 1, obs, lengths)
                parts.append(part)
            batch = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
            weights = discounted_returns(batch["reward"], gamma)
            if standardise:
                weights = (weights - weights.mean()) / (weights.std() + 1e-8)
            _, grads = mlp_gradients(actor, batch["obs"],
                                     reinforce_logit_grad(batch["probs"], batch["action"], weights))
            actor_opt.step(grads)
            steps += len(weights)
        elif agent == "a2c":
            batch, obs = collect_steps(env, actor, rng, 16, obs, lengths)
            values = mlp_forward(critic, batch["obs"])[0][:, 0]
            next_values = mlp_forward(critic, batch["next_obs"])[0][:, 0]
            advantages = td_advantage(batch["reward"], values, next_values, batch["terminated"], gamma)
            n = len(advantages)
            # Critic: minimise mean((V - target)^2) / 2 with target = values + advantages held fixed.
            _, grads = mlp_gradients(critic, batch["obs"], (-advantages / n)[:, None])
            critic_opt.step(grads)
            _, grads = mlp_gradients(actor, batch["obs"],
                                     reinforce_logit_grad(batch["probs"], batch["action"], advantages))
            actor_opt.step(grads)
            steps += n
        elif agent == "ppo":
            batch, obs = collect_steps(env, actor, rng, 256, obs, lengths)
            values = mlp_forward(critic, batch["obs"])[0][:, 0]
            next_values = mlp_forward(critic, batch["next_obs"])[0][:, 0]
            advantages = gae(batch["reward"], values, next_values, batch["terminated"],
                             batch["truncated"], gamma, lam)
            targets = advantages + values
            n = len(advantages)
            for _ in range(4):
                order = rng.permutation(n)
                for start in range(0, n, 64):
                    mb = order[start:start + 64]
                    adv = advantages[mb]
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                    logits, cache = mlp_forward(actor, batch["obs"][mb])
                    grad_logits = ppo_logit_grad(softmax(logits), batch["probs"][mb],
                                                 batch["action"][mb], adv, 0.2)
                    actor_opt.step(mlp_backward(actor, cache, grad_logits))
                    v, _ = mlp_forward(critic, batch["obs"][mb])
                    _, grads = mlp_gradients(critic, batch["obs"][mb],
                                             (v[:, 0] - targets[mb])[:, None] / len(mb))
                    critic_opt.step(grads)
            steps += n
        else:
            raise ValueError(f"unknown agent {agent!r}")
    return np.array(lengths)


def smooth(values, width=10):
    values = np.asarray(values, dtype=float)
    if len(values) < width:
        return values
    return np.convolve(values, np.ones(width) / width, mode="valid")


def first_and_last(lengths, fraction=0.2):
    """Mean episode length over the first and the last 20% of a run's episodes."""
    k = max(1, int(len(lengths) * fraction))
    return float(np.mean(lengths[:k])), float(np.mean(lengths[-k:]))
