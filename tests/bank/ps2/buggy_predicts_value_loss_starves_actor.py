"""Predicts that a ten times heavier value loss leaves the actor a smaller step: true of a shared trunk
or plain SGD, not of separate networks under Adam, which divides out the norm clip's common shrink."""
EDITS = {"predict_break_it": [('"value loss dominates": "about the same"', '"value loss dominates": "smaller"')]}
LOSES = {"predictions.value_loss_kl": "prediction_value_loss_moves_policy"}
