"""The bootstrap is right, but the lambda-trace runs on into the next episode's rows."""
EDITS = {'compute_gae': [('running = deltas[t] + gamma * lam * not_ended[t] * running', 'running = deltas[t] + gamma * lam * running')]}
# The property item passes: at lambda = 0 no trace is carried, and its lambda = 1 case has one
# episode per column, so no trace crosses a boundary; the exact-advantage and buffer items
# catch the bug and name it.
LOSES = {'gae.exact_advantage': 'trace_not_cut_at_boundary', 'gae.buffers': 'trace_not_cut_at_boundary'}
