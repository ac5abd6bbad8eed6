"""logp_old is not detached. Values and the gradient into logp_new are unchanged; only the gradient into logp_old shows it."""
EDITS = {'clipped_surrogate': [('ratio = torch.exp(logp_new - logp_old.detach())', 'ratio = torch.exp(logp_new - logp_old)')]}
LOSES = {'ppo_loss.old_logp_frozen': 'old_logp_not_frozen'}
