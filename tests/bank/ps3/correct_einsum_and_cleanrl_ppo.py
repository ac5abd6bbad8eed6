"""Correct but different: einsum backprop caching the pre-activation, CleanRL's max form for PPO.

* `mlp_forward` caches (x, pre-activation) and `mlp_backward` recomputes tanh' = 1 - tanh(pre)^2;
  every product is an np.einsum.
* `ppo_logit_grad` follows CleanRL's loss max(-A r, -A clip(r)): per row it takes the gradient of
  whichever term is larger (the unclipped one on ties), and the clipped term's gradient is the
  unclipped one inside the band and zero outside it. This is the min written another way.
* `discounted_returns` appends to a list while walking backwards and reverses it.

Every item must pass.
"""
CELLS = {
    "mlp": '''def mlp_forward(params, x):
    """Forward pass; the cache keeps the pre-activation."""
    pre = np.einsum("bi,ih->bh", x, params["W1"]) + params["b1"]
    out = np.einsum("bh,ho->bo", np.tanh(pre), params["W2"]) + params["b2"]
    return out, {"x": x, "pre": pre}


def mlp_backward(params, cache, grad_out):
    """Backward pass with einsum."""
    x, pre = cache["x"], cache["pre"]
    hidden = np.tanh(pre)
    grad_pre = np.einsum("bo,ho->bh", grad_out, params["W2"]) * (1.0 - np.tanh(pre) ** 2)
    return {"W1": np.einsum("bi,bh->ih", x, grad_pre), "b1": np.einsum("bh->h", grad_pre),
            "W2": np.einsum("bh,bo->ho", hidden, grad_out), "b2": np.einsum("bo->o", grad_out)}
''',
    "ppo_logit_grad": '''def ppo_logit_grad(probs, old_probs, actions, advantages, eps=0.2):
    """Gradient of mean(max(-A r, -A clip(r))), CleanRL's form of the clipped loss."""
    n = len(actions)
    rows = np.arange(n)
    ratio = probs[rows, actions] / old_probs[rows, actions]
    loss_unclipped = -advantages * ratio
    loss_clipped = -advantages * np.clip(ratio, 1 - eps, 1 + eps)
    inside = (ratio >= 1 - eps) & (ratio <= 1 + eps)
    dloss_dratio = np.where(loss_unclipped >= loss_clipped, -advantages,
                            np.where(inside, -advantages, 0.0))
    dratio_dlogits = ratio[:, None] * (np.eye(probs.shape[1])[actions] - probs)
    return dloss_dratio[:, None] * dratio_dlogits / n
''',
    "discounted_returns": '''def discounted_returns(rewards, gamma):
    """Reward-to-go, built backwards in a list."""
    out, g = [], 0.0
    for r in rewards[::-1]:
        g = r + gamma * g
        out.append(g)
    return np.array(out[::-1])
''',
}
LOSES = {}
