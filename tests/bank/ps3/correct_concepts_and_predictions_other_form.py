"""The right concept answers and predictions written another way: capitals and stray spaces,
integers for floats, annotated assignments, comments, and a first guess corrected below it."""
CELLS = {
    "concept_checks": """CONCEPT_GREEDY_FLIP: float = 1
CONCEPT_CONTINUOUS_ACTIONS = " A"
CONCEPT_STOCHASTIC_POLICY = 'B'
CONCEPT_STANDARDISED_RETURNS = "b "  # one shift per episode
CONCEPT_TIME_LIMIT_TARGET = 50.5004
CONCEPT_CLIP_HARD_BOUND = "a"
CONCEPT_CLIP_HARD_BOUND = "b"  # on second thought: other samples' steps move it too
""",
    "predict_experiments": """# Written before running anything.
LAMBDA_PREDICTION: str = "Lambda = 0 lower "
SPARSE_PREDICTION = ' DOES NOT LEARN'
""",
}
LOSES = {}
