"""clip(r) * A on its own: flat outside the band on both sides."""
EDITS = {'clipped_surrogate': [('return torch.min(ratio * advantages, torch.clamp(ratio, 1 - eps, 1 + eps) * advantages)', 'return torch.clamp(ratio, 1 - eps, 1 + eps) * advantages')]}
LOSES = {'surrogate.every_region': 'clip_without_min', 'ppo_loss.value': 'clip_without_min', 'ppo_loss.gradient_regions': 'clip_without_min', 'objective.value': 'clip_without_min'}
