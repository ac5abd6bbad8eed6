"""One shuffled pass over the rollout: config.epochs is ignored."""
EDITS = {'ppo_update': [('    for _ in range(config.epochs):\n', '    for _ in range(1):  # one pass\n')]}
LOSES = {'update.epochs_and_minibatches': 'single_epoch'}
