"""The right concept answers written another way: capitals and spaces around the letters, numbers
rounded to three decimals (within the stated 0.001), integers for floats, a float for the count,
annotated assignments, an answer first guessed and then corrected further down the cell."""
CELLS = {"concept_checks": """CONCEPT_TRUST_REGION: str = " B "
CONCEPT_KL_MEAN_SHIFT = 1
CONCEPT_KL_STD_RATIO = 'C'
CONCEPT_CLIPPED_VALUE = -2.8000
CONCEPT_SLOPE_FAVOURED = 0
CONCEPT_SLOPE_WRONG_WAY = 2
CONCEPT_GAE_TRUNCATED = 1.379
CONCEPT_GAE_TERMINATED = 0.833
CONCEPT_LAMBDA_ZERO = "A"
CONCEPT_GRADIENT_STEPS = 320.0
CONCEPT_EPOCHS_EFFICIENCY = "b"
CONCEPT_ENTROPY_SIGN = "a"  # first thought
CONCEPT_ENTROPY_SIGN = "b"  # -c2 H: minimising it raises H
CONCEPT_VALUE_COEF = "a"
CONCEPT_GRAD_CLIP = "c"
"""}
LOSES = {}
