"""The trace decays by lambda alone, without gamma. With an exact critic every later residual has mean zero, so the
expected advantage of the tiny MDP is blind to the weights and that item passes; the others see it."""
EDITS = {'compute_gae': [('running = deltas[t] + gamma * lam * not_ended[t] * running', 'running = deltas[t] + lam * not_ended[t] * running')]}
LOSES = {'gae.course_examples': 'trace_decay_lambda_only', 'gae.properties': 'trace_decay_lambda_only', 'gae.buffers': 'trace_decay_lambda_only'}
