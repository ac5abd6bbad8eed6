"""Predicts that dropping the small entropy bonus makes each update move the policy less."""
EDITS = {"predict_break_it": [('"no entropy": "about the same"', '"no entropy": "smaller"')]}
LOSES = {"predictions.break_it_kl": "prediction_entropy_moves_policy"}
