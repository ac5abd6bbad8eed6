"""The concept checks' remaining wrong options (questions with one wrong option are answered
right), an unknown wrong number, and a letter that is not an option."""
CELLS = {"concept_checks": """CONCEPT_TRUST_REGION = "c"
CONCEPT_KL_MEAN_SHIFT = 1.0
CONCEPT_KL_STD_RATIO = "a"
CONCEPT_CLIPPED_VALUE = 2.8
CONCEPT_SLOPE_FAVOURED = 0.0
CONCEPT_SLOPE_WRONG_WAY = 2.0
CONCEPT_GAE_TRUNCATED = 1.575
CONCEPT_GAE_TERMINATED = 0.8325
CONCEPT_LAMBDA_ZERO = "a"
CONCEPT_GRADIENT_STEPS = 32
CONCEPT_EPOCHS_EFFICIENCY = "d"
CONCEPT_ENTROPY_SIGN = "b"
CONCEPT_VALUE_COEF = "a"
CONCEPT_GRAD_CLIP = "b"
"""}
LOSES = {
    "concepts.trust_region": "parameter_step_is_policy_step",
    "concepts.kl_std_ratio": "clip_eps_is_kl_bound",
    "concepts.clipped_value": "wrong_value",
    "concepts.gae_truncated": "trace_decay_lambda_only",
    "concepts.gradient_steps": "epochs_are_gradient_steps",
    "concepts.epochs_efficiency": "bad_output",
    "concepts.grad_clip": "grad_clip_is_trust_region",
}
