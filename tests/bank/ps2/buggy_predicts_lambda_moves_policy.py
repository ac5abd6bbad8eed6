"""Predicts that Monte Carlo advantages (lambda = 1) make each update move the policy further."""
EDITS = {"predict_break_it": [('"lambda = 1": "about the same"', '"lambda = 1": "larger"')]}
LOSES = {"predictions.break_it_kl": "prediction_lambda_moves_policy"}
