"""The permutation is drawn once, before the epochs: every epoch uses the same minibatches."""
EDITS = {'ppo_update': [
    ('    for _ in range(config.epochs):\n        order = torch.randperm(size, generator=generator)\n',
     '    order = torch.randperm(size, generator=generator)\n    for _ in range(config.epochs):\n')]}
LOSES = {'update.epochs_and_minibatches': 'minibatches_not_shuffled'}
