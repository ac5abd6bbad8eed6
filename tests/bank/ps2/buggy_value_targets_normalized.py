"""The critic's targets are built from normalised advantages (torch's default std, n - 1)."""
EDITS = {'compute_gae': [('    return advantages + values\n', '    normalised = (advantages - advantages.mean()) / (advantages.std() + 1e-8)\n    return normalised + values\n')]}
LOSES = {'value_targets.raw': 'value_targets_from_normalized_advantages'}
