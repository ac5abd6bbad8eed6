"""Predicts that removing the clip only multiplies the KL by a few: as if the learning rate bounded ten epochs."""
EDITS = {"predict_break_it": [('"no clip": "much larger"', '"no clip": "larger"')]}
LOSES = {"predictions.break_it_kl": "prediction_clip_not_the_limit"}
