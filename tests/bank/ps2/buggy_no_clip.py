"""The ratio is never clipped: r * A everywhere."""
EDITS = {'clipped_surrogate': [('return torch.min(ratio * advantages, torch.clamp(ratio, 1 - eps, 1 + eps) * advantages)', 'return ratio * advantages')]}
LOSES = {'surrogate.every_region': 'no_clip', 'ppo_loss.value': 'no_clip', 'ppo_loss.gradient_regions': 'no_clip', 'objective.value': 'no_clip'}
