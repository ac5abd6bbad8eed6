"""Predicts that without the gradient-norm clip each update moves the policy much further, as if the
norm clip bounded the step; under Adam the step is about the learning rate either way."""
EDITS = {"predict_break_it": [('"no gradient clipping": "about the same"', '"no gradient clipping": "much larger"')]}
LOSES = {"predictions.grad_clip_kl": "prediction_grad_clip_bounds_update"}
