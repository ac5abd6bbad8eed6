"""Predicts that the clipped term alone restrains the update as PPO's min does."""
EDITS = {"predict_break_it": [('"clip without min": "larger"', '"clip without min": "about the same"')]}
LOSES = {"predictions.break_it_kl": "prediction_clip_alone_is_ppo"}
