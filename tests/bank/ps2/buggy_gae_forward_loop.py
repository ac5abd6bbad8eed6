"""The recursion runs forward in time, so each advantage sums the residuals before it."""
EDITS = {'compute_gae': [('    for t in reversed(range(deltas.shape[0])):\n        running = deltas[t] + gamma * lam * not_ended[t] * running', '    for t in range(deltas.shape[0]):\n        running = deltas[t] + gamma * lam * (not_ended[t - 1] if t > 0 else 0.0) * running')]}
# The exact-advantage item catches this bug but cannot name it: its forward-loop model does not
# reproduce this entry's trace over whole trajectories (the three other GAE items name it).
LOSES = {'gae.course_examples': 'gae_forward_loop', 'gae.exact_advantage': 'wrong_value', 'gae.properties': 'gae_forward_loop', 'gae.buffers': 'gae_forward_loop'}
