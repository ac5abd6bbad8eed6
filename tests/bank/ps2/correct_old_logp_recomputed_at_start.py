"""Recomputes the old log-probabilities from the networks once, before the first epoch, instead
of reading batch["logp"]. The contract says batch["logp"] holds the log-probabilities of the
actions under the policy that collected them, and that policy is the one ppo_update is handed,
so on any batch a rollout produces the two are the same numbers: must get full marks (the
graders' probe batch is such a rollout)."""
EDITS = {"ppo_update": [
    ('    advantages = batch["advantages"]\n',
     '    with torch.no_grad():\n'
     '        logp_old = policy(actor_mean, log_std, batch["observations"]).log_prob(batch["actions"]).sum(-1)\n'
     '    advantages = batch["advantages"]\n'),
    ('loss = objective(logp_new, batch["logp"][index],', 'loss = objective(logp_new, logp_old[index],'),
    ('batch["actions"]).sum(-1), batch["logp"], config.eps)', 'batch["actions"]).sum(-1), logp_old, config.eps)'),
]}
LOSES = {}
