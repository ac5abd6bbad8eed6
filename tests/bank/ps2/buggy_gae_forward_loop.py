"""The recursion runs forward in time, so each advantage sums the residuals before it."""
EDITS = {'compute_gae': [('    for t in reversed(range(deltas.shape[0])):\n        running = deltas[t] + gamma * lam * not_ended[t] * running', '    for t in range(deltas.shape[0]):\n        running = deltas[t] + gamma * lam * (not_ended[t - 1] if t > 0 else 0.0) * running')]}
# Every GAE item names it, the exact-advantage one too (it used to say wrong_value: it pooled the
# forward model's two forms into one value that matched nothing, issue 30).
LOSES = {'gae.course_examples': 'gae_forward_loop', 'gae.exact_advantage': 'gae_forward_loop', 'gae.properties': 'gae_forward_loop', 'gae.buffers': 'gae_forward_loop'}
