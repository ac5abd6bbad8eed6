"""The statistics are computed on the whole batch before the epochs, under the policy that
collected the data, so they never show how far the update moved it."""
EDITS = {'ppo_update': [
    ('    parameters = [*actor_mean.parameters(), log_std, *critic.parameters()]\n',
     '    parameters = [*actor_mean.parameters(), log_std, *critic.parameters()]\n'
     '    with torch.no_grad():\n'
     '        behaviour = policy(actor_mean, log_std, batch["observations"])\n'
     '        stats = update_statistics(behaviour.log_prob(batch["actions"]).sum(-1), batch["logp"], config.eps)\n'
     '        stats["entropy"] = behaviour.entropy().sum(-1).mean().item()\n'),
    ('''    with torch.no_grad():
        distribution = policy(actor_mean, log_std, batch["observations"])
        stats = update_statistics(distribution.log_prob(batch["actions"]).sum(-1), batch["logp"], config.eps)
        stats["entropy"] = distribution.entropy().sum(-1).mean().item()
    return stats''', '    return stats')]}
LOSES = {'update.statistics': 'statistics_not_after_update'}
