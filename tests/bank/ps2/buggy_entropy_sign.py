"""The entropy bonus is added to the loss, so minimising lowers the entropy."""
EDITS = {'ppo_objective': [('return policy_loss + c1 * value_loss - c2 * entropy.mean()', 'return policy_loss + c1 * value_loss + c2 * entropy.mean()')]}
LOSES = {'objective.value': 'entropy_sign', 'objective.gradients': 'entropy_sign'}
