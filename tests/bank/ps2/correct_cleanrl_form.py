"""Written the way CleanRL's ppo_continuous_action.py writes it: must get full marks.

* the policy loss is max(-A * ratio, -A * clamp(ratio)) per sample, which is minus the min form;
  logp_old enters through logratio = newlogprob - oldlogprob.detach();
* GAE with `nextnonterminal` and `lastgaelam`, written with torch.where and float flags;
* approx_kl is ((ratio - 1) - logratio).mean() and the clip fraction uses torch.gt, both under
  no_grad; the KL uses variances instead of standard deviations;
* the update loop as CleanRL writes it: b_inds shuffled in place by NumPy's global generator
  (the given torch generator is not used), mb_advantages normalised per minibatch, the gradient
  clipped over optimizer.param_groups.
"""
FOLLOWS = "cleanrl/ppo_continuous_action.py"
CELLS = {
    "gaussian_kl": '''def gaussian_kl(mu_p, std_p, mu_q, std_q):
    """KL(N_p || N_q) written with variances."""
    var_p, var_q = std_p ** 2, std_q ** 2
    return 0.5 * (torch.log(var_q / var_p) + (var_p + (mu_p - mu_q) ** 2) / var_q - 1.0)
''',
    "clipped_surrogate": '''def clipped_surrogate(ratio, advantages, eps=0.2):
    """min(r A, clip(r) A), as minus the max of the negated terms."""
    return -torch.max(-advantages * ratio, -advantages * torch.clamp(ratio, 1 - eps, 1 + eps))


def ppo_loss(logp_new, logp_old, advantages, eps=0.2):
    """CleanRL's pg_loss."""
    logratio = logp_new - logp_old.detach()
    ratio = logratio.exp()
    pg_loss1 = -advantages * ratio
    pg_loss2 = -advantages * torch.clamp(ratio, 1 - eps, 1 + eps)
    return torch.max(pg_loss1, pg_loss2).mean()
''',
    "compute_gae": '''def compute_gae(rewards, values, next_values, terminated, truncated, gamma=0.99, lam=0.95):
    """CleanRL-style backward recursion with nextnonterminal and lastgaelam."""
    T = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros_like(rewards[0])
    for t in reversed(range(T)):
        nextnonterminal = torch.where(terminated[t], 0.0, 1.0)
        notdone = torch.where(terminated[t] | truncated[t], 0.0, 1.0)
        delta = rewards[t] + gamma * next_values[t] * nextnonterminal - values[t]
        lastgaelam = delta + gamma * lam * notdone * lastgaelam
        advantages[t] = lastgaelam
    return advantages


def value_targets(advantages, values):
    """b_returns = advantages + values."""
    returns = advantages + values
    return returns
''',
    "ppo_objective": '''def ppo_objective(logp_new, logp_old, advantages, values, returns, entropy, eps=0.2, c1=0.5, c2=0.01):
    """pg_loss - ent_coef * entropy_loss + v_loss * vf_coef."""
    pg_loss = ppo_loss(logp_new, logp_old, advantages, eps)
    entropy_loss = entropy.mean()
    v_loss = ((values - returns) ** 2).mean()
    return pg_loss - c2 * entropy_loss + v_loss * c1


def update_statistics(logp_new, logp_old, eps=0.2):
    """approx_kl and clipfrac as CleanRL logs them."""
    with torch.no_grad():
        logratio = logp_new - logp_old
        ratio = logratio.exp()
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = torch.gt((ratio - 1.0).abs(), eps).float().mean()
    return {"clip_fraction": float(clipfrac), "approx_kl": float(approx_kl)}
''',
    "ppo_update": '''def ppo_update(batch, actor_mean, log_std, critic, optimizer, config, generator, objective):
    """The update loop as CleanRL's ppo_continuous_action.py writes it (norm_adv per minibatch)."""
    b_obs, b_actions, b_logprobs = batch["observations"], batch["actions"], batch["logp"]
    b_advantages, b_returns = batch["advantages"], batch["returns"]
    batch_size = b_advantages.shape[0]
    b_inds = np.arange(batch_size)
    for epoch in range(config.epochs):
        np.random.shuffle(b_inds)
        for start in range(0, batch_size, config.minibatch):
            end = start + config.minibatch
            mb_inds = b_inds[start:end]
            probs = policy(actor_mean, log_std, b_obs[mb_inds])
            newlogprob = probs.log_prob(b_actions[mb_inds]).sum(1)
            entropy = probs.entropy().sum(1)
            newvalue = critic(b_obs[mb_inds]).view(-1)
            mb_advantages = b_advantages[mb_inds]
            mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
            loss = objective(newlogprob, b_logprobs[mb_inds], mb_advantages, newvalue, b_returns[mb_inds],
                             entropy, config.eps, config.c1, config.c2)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(optimizer.param_groups[0]["params"], config.max_norm)
            optimizer.step()
    with torch.no_grad():
        probs = policy(actor_mean, log_std, b_obs)
        stats = update_statistics(probs.log_prob(b_actions).sum(1), b_logprobs, config.eps)
        stats["entropy"] = probs.entropy().sum(1).mean().item()
    return stats
''',
}
LOSES = {}
