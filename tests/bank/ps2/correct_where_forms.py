"""Other correct forms: the surrogate with torch.where region by region; logp_old frozen by
cloning it under torch.no_grad(); GAE built from a Python list of rows stacked at the end; the
statistics computed in NumPy. Must get full marks."""
CELLS = {
    "clipped_surrogate": '''def clipped_surrogate(ratio, advantages, eps=0.2):
    """Flat where the ratio left the band in the direction the advantage favours."""
    capped_high = (advantages > 0) & (ratio > 1 + eps)
    capped_low = (advantages < 0) & (ratio < 1 - eps)
    value = torch.where(capped_high, (1 + eps) * advantages, ratio * advantages)
    return torch.where(capped_low, (1 - eps) * advantages, value)


def ppo_loss(logp_new, logp_old, advantages, eps=0.2):
    """Minus the mean surrogate, with a frozen copy of logp_old."""
    with torch.no_grad():
        frozen = logp_old.clone()
    return -torch.mean(clipped_surrogate(torch.exp(logp_new - frozen), advantages, eps))
''',
    "compute_gae": '''def compute_gae(rewards, values, next_values, terminated, truncated, gamma=0.99, lam=0.95):
    """Rows collected backwards in a list, then reversed and stacked."""
    rows = []
    following = None
    for t in range(rewards.shape[0] - 1, -1, -1):
        bootstrap = torch.where(terminated[t], torch.zeros_like(next_values[t]), next_values[t])
        delta = rewards[t] + gamma * bootstrap - values[t]
        if following is not None:
            ended = terminated[t] | truncated[t]
            delta = delta + torch.where(ended, torch.zeros_like(delta), gamma * lam * following)
        rows.append(delta)
        following = delta
    return torch.stack(rows[::-1])


def value_targets(advantages, values):
    """Raw advantages plus values."""
    return values + advantages
''',
    "ppo_objective": '''def ppo_objective(logp_new, logp_old, advantages, values, returns, entropy, eps=0.2, c1=0.5, c2=0.01):
    """Policy loss, weighted MSE, minus the entropy bonus."""
    value_loss = torch.nn.functional.mse_loss(values, returns)
    return ppo_loss(logp_new, logp_old, advantages, eps) + c1 * value_loss - c2 * entropy.mean()


def update_statistics(logp_new, logp_old, eps=0.2):
    """The two statistics in NumPy."""
    log_ratio = (logp_new - logp_old).detach().numpy()
    ratio = np.exp(log_ratio)
    return {"clip_fraction": float(np.mean(np.abs(ratio - 1) > eps)),
            "approx_kl": float(np.mean(ratio - 1 - log_ratio))}
''',
}
LOSES = {}
