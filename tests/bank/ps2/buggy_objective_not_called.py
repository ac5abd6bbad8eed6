"""ppo_update calls ppo_objective by name instead of the `objective` it is given. A normal run is
unaffected, but the lab's broken objectives never take effect, and the graders cannot see which
samples each step used."""
EDITS = {'ppo_update': [('loss = objective(logp_new,', 'loss = ppo_objective(logp_new,')]}
LOSES = {'update.epochs_and_minibatches': 'objective_not_called',
         'update.objective_inputs': 'objective_not_called',
         'update.gradient_steps': 'objective_not_called'}
