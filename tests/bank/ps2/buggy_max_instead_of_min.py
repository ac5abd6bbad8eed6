"""torch.max instead of torch.min: an optimistic objective."""
EDITS = {'clipped_surrogate': [('return torch.min(ratio * advantages,', 'return torch.max(ratio * advantages,')]}
LOSES = {'surrogate.every_region': 'max_instead_of_min', 'ppo_loss.value': 'max_instead_of_min', 'ppo_loss.gradient_regions': 'max_instead_of_min', 'objective.value': 'max_instead_of_min'}
