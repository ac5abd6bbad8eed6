"""Correct but different: logsumexp softmax, closed-form vectorised returns, matrix GAE.

* `softmax` computes log-probabilities with a logsumexp (max-shifted inside) and exponentiates.
* `discounted_returns` builds the upper-triangular matrix gamma**(k - t) and multiplies; no loop.
* `td_advantage` uses np.where instead of a (1 - terminated) factor.
* `gae` builds the [T, T] matrix of (gamma lam)^(k - t) products, zeroed past each episode end,
  and multiplies it by the TD errors.
* `reinforce_logit_grad` subtracts a one-hot matrix built with np.eye and scales with reshape(-1, 1).

Every item must pass.
"""
CELLS = {
    "softmax": '''def softmax(logits):
    """Probabilities along the last axis (via logsumexp)."""
    top = np.max(logits, axis=-1, keepdims=True)
    log_norm = top + np.log(np.sum(np.exp(logits - top), axis=-1, keepdims=True))
    return np.exp(logits - log_norm)
''',
    "discounted_returns": '''def discounted_returns(rewards, gamma):
    """Reward-to-go with a discount matrix."""
    T = len(rewards)
    k = np.arange(T)
    power = k[None, :] - k[:, None]
    weights = np.where(power >= 0, float(gamma) ** np.maximum(power, 0), 0.0)
    return weights @ np.asarray(rewards, dtype=float)
''',
    "td_advantage": '''def td_advantage(rewards, values, next_values, terminated, gamma):
    """TD advantages with np.where."""
    bootstrap = np.where(terminated, 0.0, gamma * next_values)
    return rewards + bootstrap - values
''',
    "gae": '''def gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    """GAE as a matrix of trace weights times the TD errors."""
    T = len(rewards)
    deltas = rewards + np.where(terminated, 0.0, gamma * next_values) - values
    ends = terminated | truncated
    trace = np.zeros((T, T))
    for t in range(T):
        weight = 1.0
        for k in range(t, T):
            trace[t, k] = weight
            if ends[k]:
                break
            weight *= gamma * lam
    return trace @ deltas
''',
    "reinforce_logit_grad": '''def reinforce_logit_grad(probs, actions, weights):
    """(pi - onehot) * w / n with an identity-matrix one-hot."""
    onehot = np.eye(probs.shape[1])[actions]
    return (probs - onehot) * np.reshape(weights, (-1, 1)) / len(actions)
''',
}
LOSES = {}
