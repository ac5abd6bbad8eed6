"""Correct but different: per-row Python loops for every gradient and advantage.

* `reinforce_logit_grad` and `ppo_logit_grad` fill the gradient row by row, the PPO one branching
  on the sign of the advantage (A >= 0: flat above 1 + eps; A < 0: flat below 1 - eps).
* `td_advantage` loops with an if on terminated.
* `mlp_backward` computes the bias gradients with explicit loops over the batch.

Every item must pass.
"""
CELLS = {
    "reinforce_logit_grad": '''def reinforce_logit_grad(probs, actions, weights):
    """Row by row."""
    n, k = probs.shape
    out = np.zeros((n, k))
    for i in range(n):
        for j in range(k):
            indicator = 1.0 if j == actions[i] else 0.0
            out[i, j] = weights[i] * (probs[i, j] - indicator) / n
    return out
''',
    "ppo_logit_grad": '''def ppo_logit_grad(probs, old_probs, actions, advantages, eps=0.2):
    """Row by row, branching on the advantage's sign."""
    n, k = probs.shape
    out = np.zeros((n, k))
    for i in range(n):
        a = actions[i]
        r = probs[i, a] / old_probs[i, a]
        if advantages[i] >= 0 and r > 1 + eps:
            continue
        if advantages[i] < 0 and r < 1 - eps:
            continue
        for j in range(k):
            out[i, j] = advantages[i] * r * (probs[i, j] - (j == a)) / n
    return out
''',
    "td_advantage": '''def td_advantage(rewards, values, next_values, terminated, gamma):
    """Step by step."""
    out = np.zeros(len(rewards))
    for t in range(len(rewards)):
        target = rewards[t] if terminated[t] else rewards[t] + gamma * next_values[t]
        out[t] = target - values[t]
    return out
''',
}
EDITS = {"mlp": [('"b1": grad_pre.sum(axis=0)', '"b1": sum(grad_pre[i] for i in range(len(grad_pre)))'),
                 ('"b2": grad_out.sum(axis=0)}', '"b2": sum(grad_out[i] for i in range(len(grad_out)))}')]}
LOSES = {}
