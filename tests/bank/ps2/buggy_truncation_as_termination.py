"""A single `done` flag for both endings: truncated steps do not bootstrap either."""
EDITS = {'compute_gae': [('not_terminated = (~terminated).to(rewards.dtype)', 'not_terminated = (~(terminated | truncated)).to(rewards.dtype)')]}
LOSES = {'gae.course_examples': 'truncation_as_termination', 'gae.exact_advantage': 'truncation_as_termination', 'gae.properties': 'truncation_as_termination', 'gae.buffers': 'truncation_as_termination'}
