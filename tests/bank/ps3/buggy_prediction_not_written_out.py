"""A prediction computed, not written (a lookup in a table), and another that is not an option:
neither is a prediction the item can read, so both are lost as bad output."""
CELLS = {"predict_experiments": """options = ("lambda = 0 lower", "about the same", "lambda = 0 higher")
LAMBDA_PREDICTION = options[0]
SPARSE_PREDICTION = "it depends"
"""}
LOSES = {"predictions.lambda": "bad_output", "predictions.sparse": "bad_output"}
