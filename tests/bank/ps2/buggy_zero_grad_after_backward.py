"""optimizer.zero_grad() comes after loss.backward(): every gradient is erased before the
optimizer sees it, so the networks never change and training cannot improve."""
EDITS = {'ppo_update': [('            optimizer.zero_grad()\n            loss.backward()\n',
                         '            loss.backward()\n            optimizer.zero_grad()\n')]}
LOSES = {'update.gradient_steps': 'wrong_value', 'training.improves': 'training_not_improving'}
