"""optimizer.zero_grad() is missing: every step's gradient is added to what .grad already held
(the previous step's clipped gradient)."""
EDITS = {'ppo_update': [('            optimizer.zero_grad()\n', '')]}
LOSES = {'update.gradient_steps': 'gradients_not_zeroed'}
