"""The gradient norm is never clipped before the optimizer steps."""
EDITS = {'ppo_update': [('            torch.nn.utils.clip_grad_norm_(parameters, config.max_norm)\n', '')]}
LOSES = {'update.gradient_steps': 'no_grad_clipping'}
