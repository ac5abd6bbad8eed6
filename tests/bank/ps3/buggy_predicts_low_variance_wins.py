"""Predicts that lambda = 0's low variance wins, and that a sparse reward is a weaker signal."""
CELLS = {"predict_experiments": """LAMBDA_PREDICTION = "lambda = 0 higher"
SPARSE_PREDICTION = "learns, but more slowly"
"""}
LOSES = {"predictions.lambda": "prediction_low_variance_wins",
         "predictions.sparse": "prediction_sparse_signal_weaker"}
