"""The prediction is computed, not written: a student who fills it in from a table (here a dict
built by a comprehension) has not predicted anything, so the item refuses anything but a literal."""
CELLS = {"predict_break_it": """bands = {"no clip": "much larger", "clip without min": "larger", "K = 1": "smaller"}
KL_PREDICTION = {name: bands.get(name, "about the same")
                 for name in ("no clip", "clip without min", "lambda = 1", "K = 1", "no entropy", "wrong bootstrap")}
"""}
LOSES = {"predictions.break_it_kl": "bad_output"}
