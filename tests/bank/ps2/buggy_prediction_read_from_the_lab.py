"""The prediction is computed, not written: a student who fills it in from a table (here a dict
built by a comprehension) has not predicted anything, so the items refuse anything but a literal."""
CELLS = {"predict_break_it": """bands = {"no clip": "much larger", "clip without min": "larger", "K = 1": "smaller"}
KL_PREDICTION = {name: bands.get(name, "about the same")
                 for name in ("no clip", "clip without min", "lambda = 1", "K = 1", "no entropy", "wrong bootstrap",
                              "value loss dominates", "no gradient clipping")}
"""}
LOSES = {"predictions.break_it_kl": "bad_output", "predictions.value_loss_kl": "bad_output",
         "predictions.grad_clip_kl": "bad_output"}
