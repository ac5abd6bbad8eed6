"""The ps3 oracle: values the graders trust, computed independently of the reference (float64).

* Closed forms: the softmax bandit's exact policy gradient pi(a) (Q(a) - sum_b pi(b) Q(b)).
* A two-state, two-action MDP with a finite horizon: exact Q^pi and state visitation by dynamic
  programming, the exact gradient by the policy-gradient theorem, and every trajectory with its
  probability (enumeration) for the expectation of sampled estimators.
* Slow, obviously correct forms of the graded functions: explicit double sums for returns and
  GAE, and central finite differences of the losses the gradients belong to.
"""
from __future__ import annotations

import itertools

import numpy as np


# --- basic pieces ---------------------------------------------------------------------------------
def log_softmax(logits):
    logits = np.asarray(logits, dtype=np.float64)
    top = np.max(logits, axis=-1, keepdims=True)
    return logits - top - np.log(np.sum(np.exp(logits - top), axis=-1, keepdims=True))


def softmax(logits):
    return np.exp(log_softmax(logits))


def finite_difference(function, x, step=1e-6):
    """Central differences of a scalar function with respect to every entry of array x."""
    point = np.array(x, dtype=np.float64)
    grad = np.zeros_like(point)
    for index in np.ndindex(*point.shape):
        plus, minus = point.copy(), point.copy()
        plus[index] += step
        minus[index] -= step
        grad[index] = (function(plus) - function(minus)) / (2 * step)
    return grad


# --- returns and advantages, written as the definitions ---------------------------------------
def reward_to_go(rewards, gamma):
    """G_t = sum_{k >= t} gamma^(k - t) r_k, as a double sum."""
    rewards = np.asarray(rewards, dtype=np.float64)
    T = len(rewards)
    return np.array([sum(gamma ** (k - t) * rewards[k] for k in range(t, T)) for t in range(T)])


def td_errors(rewards, values, next_values, terminated, gamma):
    return np.array([r + (0.0 if term else gamma * nv) - v
                     for r, v, nv, term in zip(rewards, values, next_values, terminated)], dtype=np.float64)


def gae_by_definition(rewards, values, next_values, terminated, truncated, gamma, lam):
    """A_t = sum_{l >= 0} (gamma lam)^l delta_{t+l}, the sum stopping after the step that ends
    the episode (terminated or truncated); delta bootstraps from next_values unless terminated."""
    delta = td_errors(rewards, values, next_values, terminated, gamma)
    T = len(delta)
    out = np.zeros(T)
    for t in range(T):
        for l in range(T - t):
            out[t] += (gamma * lam) ** l * delta[t + l]
            if terminated[t + l] or truncated[t + l]:
                break
    return out


# --- losses on logits and their gradients ---------------------------------------------------------
def reinforce_loss(logits, actions, weights):
    """-mean(w * log pi(a)) of a batch of logits [n, A]."""
    n = logits.shape[0]
    return -np.mean(weights * log_softmax(logits)[np.arange(n), actions])


def ppo_loss(logits, old_probs, actions, advantages, eps):
    """-mean(min(r A, clip(r, 1 - eps, 1 + eps) A)), r = pi(a) / pi_old(a)."""
    n = logits.shape[0]
    rows = np.arange(n)
    ratio = softmax(logits)[rows, actions] / old_probs[rows, actions]
    return -np.mean(np.minimum(ratio * advantages, np.clip(ratio, 1 - eps, 1 + eps) * advantages))


def reinforce_logit_grad(logits, actions, weights):
    """Closed form: (pi - onehot(a)) w / n."""
    n, k = logits.shape
    onehot = np.eye(k)[actions]
    return (softmax(logits) - onehot) * np.asarray(weights, dtype=np.float64)[:, None] / n


def ppo_logit_grad(logits, old_probs, actions, advantages, eps):
    """Closed form: the REINFORCE form weighted by A r, zero where the min picks the flat
    clipped term (A > 0 above the band, A < 0 below it)."""
    n = logits.shape[0]
    rows = np.arange(n)
    ratio = softmax(logits)[rows, actions] / old_probs[rows, actions]
    flat = ((advantages > 0) & (ratio > 1 + eps)) | ((advantages < 0) & (ratio < 1 - eps))
    return reinforce_logit_grad(logits, actions, np.where(flat, 0.0, advantages * ratio)) 


# --- the two-layer MLP --------------------------------------------------------------------------
def mlp_forward(params, x):
    return np.tanh(x @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]


def mlp_gradients_fd(params, x, grad_out, step=1e-6):
    """Finite differences of sum(grad_out * mlp(x)) with respect to every parameter."""
    grads = {}
    for name in params:
        def f(value, name=name):
            return float(np.sum(grad_out * mlp_forward(dict(params, **{name: value}), x)))
        grads[name] = finite_difference(f, params[name], step)
    return grads


# --- the one-state softmax bandit -----------------------------------------------------------------
def bandit_return(theta, q):
    return float(softmax(theta) @ q)


def bandit_gradient(theta, q):
    """dJ/dtheta_a = pi(a) (Q(a) - sum_b pi(b) Q(b))."""
    pi = softmax(theta)
    return pi * (q - pi @ q)


# --- a two-state, two-action MDP with a finite horizon --------------------------------------------
class TwoStateMDP:
    """States 0 and 1, actions 0 and 1, start distribution `start`, P[s, a, s'], rewards R[s, a],
    a tabular softmax policy with logits theta[s, a], horizon H, discount gamma."""

    def __init__(self, P, R, start, horizon, gamma):
        self.P = np.asarray(P, dtype=np.float64)
        self.R = np.asarray(R, dtype=np.float64)
        self.start = np.asarray(start, dtype=np.float64)
        self.horizon, self.gamma = horizon, gamma

    def q_values(self, theta):
        """Q_t(s, a) for t = 0..H-1: the value of acting a in s with H - t steps left (DP)."""
        pi = softmax(theta)
        q = np.zeros((self.horizon, 2, 2))
        v_next = np.zeros(2)
        for t in reversed(range(self.horizon)):
            q[t] = self.R + self.gamma * self.P @ v_next
            v_next = np.sum(pi * q[t], axis=1)
        return q

    def visitation(self, theta):
        """d_t(s): probability of being in s at step t (DP forward)."""
        pi = softmax(theta)
        d = np.zeros((self.horizon, 2))
        d[0] = self.start
        for t in range(1, self.horizon):
            d[t] = np.einsum("s,sa,sap->p", d[t - 1], pi, self.P)
        return d

    def value(self, theta):
        q = self.q_values(theta)
        return float(self.start @ np.sum(softmax(theta) * q[0], axis=1))

    def exact_gradient(self, theta):
        """Policy-gradient theorem: sum_t gamma^t sum_s d_t(s) pi(b|s) (Q_t(s,b) - V_t(s))."""
        pi, q, d = softmax(theta), self.q_values(theta), self.visitation(theta)
        grad = np.zeros((2, 2))
        for t in range(self.horizon):
            v = np.sum(pi * q[t], axis=1, keepdims=True)
            grad += self.gamma ** t * d[t][:, None] * pi * (q[t] - v)
        return grad

    def trajectories(self, theta):
        """Every trajectory of the horizon with non-zero probability: (states, actions, rewards,
        probability) with arrays of length H."""
        pi = softmax(theta)
        out = []
        for s0 in range(2):
            for actions in itertools.product(range(2), repeat=self.horizon):
                for nexts in itertools.product(range(2), repeat=self.horizon - 1):
                    states = (s0, *nexts)
                    p = self.start[s0]
                    for t in range(self.horizon):
                        p *= pi[states[t], actions[t]]
                        if t + 1 < self.horizon:
                            p *= self.P[states[t], actions[t], states[t + 1]]
                    if p > 0:
                        rewards = [self.R[states[t], actions[t]] for t in range(self.horizon)]
                        out.append((np.array(states), np.array(actions), np.array(rewards), p))
        return out

    def enumerated_value(self, theta):
        return sum(p * sum(self.gamma ** t * r for t, r in enumerate(rewards))
                   for _, _, rewards, p in self.trajectories(theta))


def example_mdp(horizon=3, gamma=0.9):
    """The MDP the graders use: action 1 in state 0 pays now, action 0 leads to the better state."""
    P = [[[0.8, 0.2], [0.9, 0.1]],
         [[0.3, 0.7], [0.6, 0.4]]]
    R = [[0.0, 1.0],
         [2.0, -0.5]]
    return TwoStateMDP(P, R, start=[0.7, 0.3], horizon=horizon, gamma=gamma)


def enumeration_batch(mdp, theta):
    """Every step of every trajectory as one batch for a logit-gradient function: logits,
    actions, states, and weights n P(tau) gamma^t G_t, so that minus the mean-normalised REINFORCE
    logit gradient, summed by state, is the probability-weighted score-function estimate."""
    logits, actions, states, weights = [], [], [], []
    for traj_states, traj_actions, rewards, p in mdp.trajectories(theta):
        returns = reward_to_go(rewards, mdp.gamma)
        for t in range(mdp.horizon):
            logits.append(theta[traj_states[t]])
            actions.append(traj_actions[t])
            states.append(traj_states[t])
            weights.append(p * mdp.gamma ** t * returns[t])
    n = len(weights)
    return (np.array(logits), np.array(actions), np.array(states), n * np.array(weights))


def sum_by_state(row_grads, states):
    """The tabular policy's gradient: each row's logit gradient belongs to theta[state]."""
    out = np.zeros((2, row_grads.shape[1]))
    np.add.at(out, states, row_grads)
    return out


# --- Part 7's predictions -------------------------------------------------------------------------
# The answers to the predictions written before Experiments 3 and 4 (graders/ps3/test_predictions.py).
# `make claims` (claims/run.py) reruns both experiments on seeds 0-9 and fails if a run leaves them.
EXPERIMENT_OPTIONS = {
    "LAMBDA_PREDICTION": ("lambda = 0 lower", "about the same", "lambda = 0 higher"),
    "SPARSE_PREDICTION": ("learns as with the dense reward", "learns, but more slowly", "does not learn"),
}
EXPERIMENT_ANSWERS = {"LAMBDA_PREDICTION": "lambda = 0 lower", "SPARSE_PREDICTION": "does not learn"}
