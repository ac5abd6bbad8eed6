"""Predicts that a wrong terminal bootstrap shows in the KL: a bug in the advantages taken for a bigger step."""
EDITS = {"predict_break_it": [('"wrong bootstrap": "about the same"', '"wrong bootstrap": "much larger"')]}
LOSES = {"predictions.break_it_kl": "prediction_bootstrap_moves_policy"}
