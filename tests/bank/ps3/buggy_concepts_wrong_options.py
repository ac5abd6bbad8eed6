"""Every concept check answered with its wrong option (each question has one): each item is lost
with the tag its option reveals, the time-limit one with the code items' own tag."""
CELLS = {"concept_checks": """CONCEPT_GREEDY_FLIP = 0.02
CONCEPT_CONTINUOUS_ACTIONS = "b"
CONCEPT_STOCHASTIC_POLICY = "a"
CONCEPT_STANDARDISED_RETURNS = "a"
CONCEPT_TIME_LIMIT_TARGET = 1
CONCEPT_CLIP_HARD_BOUND = "a"
"""}
LOSES = {
    "concepts.greedy_flip": "greedy_policy_changes_smoothly",
    "concepts.continuous_actions": "argmax_free_for_continuous",
    "concepts.stochastic_policy": "deterministic_policy_suffices",
    "concepts.standardised_returns": "standardised_returns_are_baseline",
    "concepts.time_limit_target": "truncation_as_termination",
    "concepts.clip_hard_bound": "clip_is_hard_trust_region",
}
