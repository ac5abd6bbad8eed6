"""Every concept check answered with its first wrong option: each item is lost with the tag its
option reveals (several are the code items' own misconceptions, met here on paper)."""
CELLS = {"concept_checks": """CONCEPT_TRUST_REGION = "a"
CONCEPT_KL_MEAN_SHIFT = 2
CONCEPT_KL_STD_RATIO = "b"
CONCEPT_CLIPPED_VALUE = -2.4
CONCEPT_SLOPE_FAVOURED = 2
CONCEPT_SLOPE_WRONG_WAY = 0
CONCEPT_GAE_TRUNCATED = 0.8325
CONCEPT_GAE_TERMINATED = 1.379
CONCEPT_LAMBDA_ZERO = "b"
CONCEPT_GRADIENT_STEPS = 10
CONCEPT_EPOCHS_EFFICIENCY = "a"
CONCEPT_ENTROPY_SIGN = "a"
CONCEPT_VALUE_COEF = "b"
CONCEPT_GRAD_CLIP = "a"
"""}
LOSES = {
    "concepts.trust_region": "trust_region_as_numerics",
    "concepts.kl_mean_shift": "kl_linear_in_mean_shift",
    "concepts.kl_std_ratio": "kl_bound_as_log_ratio",
    "concepts.clipped_value": "clip_without_min",
    "concepts.slope_favoured": "no_clip",
    "concepts.slope_wrong_way": "clip_without_min",
    "concepts.gae_truncated": "truncation_as_termination",
    "concepts.gae_terminated": "termination_bootstraps",
    "concepts.lambda_zero": "lambda_ends_swapped",
    "concepts.gradient_steps": "epochs_are_gradient_steps",
    "concepts.epochs_efficiency": "epochs_multiply_efficiency",
    "concepts.entropy_sign": "entropy_sign",
    "concepts.value_coef": "value_loss_cannot_reach_actor",
    "concepts.grad_clip": "grad_clip_per_component",
}
