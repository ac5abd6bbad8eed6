"""Every step bootstraps from next_values, terminated ones too (the trace is still cut)."""
EDITS = {'compute_gae': [('deltas = rewards + gamma * not_terminated * next_values - values', 'deltas = rewards + gamma * next_values - values')]}
LOSES = {'gae.course_examples': 'termination_bootstraps', 'gae.exact_advantage': 'termination_bootstraps', 'gae.properties': 'termination_bootstraps', 'gae.buffers': 'termination_bootstraps'}
