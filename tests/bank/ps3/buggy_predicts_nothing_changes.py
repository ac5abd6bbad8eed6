"""Predicts that lambda does not matter and that the sparse reward teaches as the dense one does."""
CELLS = {"predict_experiments": """LAMBDA_PREDICTION = "about the same"
SPARSE_PREDICTION = "learns as with the dense reward"
"""}
LOSES = {"predictions.lambda": "prediction_lambda_irrelevant",
         "predictions.sparse": "prediction_reward_density_irrelevant"}
