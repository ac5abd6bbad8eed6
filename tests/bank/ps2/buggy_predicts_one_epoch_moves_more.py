"""Predicts that one epoch per rollout moves the policy as far as ten."""
EDITS = {"predict_break_it": [('"K = 1": "smaller"', '"K = 1": "about the same"')]}
LOSES = {"predictions.break_it_kl": "prediction_epochs_not_step_count"}
