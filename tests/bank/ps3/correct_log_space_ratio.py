"""Correct but different: the seed's style of PPO mask, and log-space ratios.

* `ppo_logit_grad` works with log-probabilities: r = exp(log pi - log pi_old), and keeps a row's
  gradient where r A <= clip(r) A (the min selects the unclipped term, ties included), as the seed
  lesson's mask does.
* `softmax` subtracts the max with np.amax and divides by a sum taken with keepdims.
* `td_advantage` and `gae` convert the flags with `~` and `astype(float)`; gae walks a while loop.

Every item must pass.
"""
CELLS = {
    "ppo_logit_grad": '''def ppo_logit_grad(probs, old_probs, actions, advantages, eps=0.2):
    """Clipped-surrogate gradient from log-probabilities and the seed's mask."""
    n = probs.shape[0]
    idx = np.arange(n)
    ratio = np.exp(np.log(probs[idx, actions]) - np.log(old_probs[idx, actions]))
    surr1 = ratio * advantages
    surr2 = np.clip(ratio, 1.0 - eps, 1.0 + eps) * advantages
    keep = (surr1 <= surr2).astype(float)
    d_logits = probs.copy()
    d_logits[idx, actions] -= 1.0
    return d_logits * (keep * advantages * ratio).reshape(n, 1) / n
''',
    "softmax": '''def softmax(logits):
    """Max-shifted softmax."""
    z = np.exp(logits - np.amax(logits, axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)
''',
    "td_advantage": '''def td_advantage(rewards, values, next_values, terminated, gamma):
    """TD advantage with a float mask."""
    alive = (~terminated).astype(float)
    return rewards - values + gamma * alive * next_values
''',
    "gae": '''def gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    """GAE with a while loop."""
    alive = (~terminated).astype(float)
    cont = (~(terminated | truncated)).astype(float)
    out = np.zeros(len(rewards))
    t, last = len(rewards) - 1, 0.0
    while t >= 0:
        delta = rewards[t] + gamma * alive[t] * next_values[t] - values[t]
        last = delta + gamma * lam * cont[t] * last
        out[t] = last
        t -= 1
    return out
''',
}
LOSES = {}
