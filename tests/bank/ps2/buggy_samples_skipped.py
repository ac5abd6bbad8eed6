"""The minibatch loop stops one minibatch early (range(0, B - M, M)), so a different M samples
are left out of every epoch."""
EDITS = {'ppo_update': [('for start in range(0, size, config.minibatch):',
                         'for start in range(0, size - config.minibatch, config.minibatch):')]}
LOSES = {'update.epochs_and_minibatches': 'samples_skipped'}
