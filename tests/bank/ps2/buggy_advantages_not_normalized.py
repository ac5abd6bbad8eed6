"""The advantages go into the policy loss raw: the normalisation line is missing."""
EDITS = {'ppo_update': [('    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)\n', '')]}
LOSES = {'update.objective_inputs': 'advantages_not_normalized'}
