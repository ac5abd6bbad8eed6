"""The ratio is exp(logp_old - logp_new), old over new. The surrogate itself is right; the loss,
its gradient and the total objective are wrong. Minimising this loss makes good actions less
likely, so training makes the policy worse from every seed."""
EDITS = {'clipped_surrogate': [('ratio = torch.exp(logp_new - logp_old.detach())', 'ratio = torch.exp(logp_old.detach() - logp_new)')]}
LOSES = {'ppo_loss.value': 'ratio_inverted', 'ppo_loss.gradient_regions': 'ratio_inverted', 'objective.value': 'ratio_inverted', 'training.improves': 'training_not_improving'}
