"""torch.max instead of torch.min: an optimistic objective, which rewards leaving the band. With
ten epochs per rollout, training falls apart from two of the graders' three seeds."""
EDITS = {'clipped_surrogate': [('return torch.min(ratio * advantages,', 'return torch.max(ratio * advantages,')]}
LOSES = {'surrogate.every_region': 'max_instead_of_min', 'ppo_loss.value': 'max_instead_of_min', 'ppo_loss.gradient_regions': 'max_instead_of_min', 'objective.value': 'max_instead_of_min', 'training.improves': 'training_not_improving'}
