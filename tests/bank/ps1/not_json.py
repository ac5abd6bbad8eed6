"""A truncated file (the start of a notebook's JSON and nothing more), as an interrupted upload
or a half-saved file gives: it cannot be parsed, so nothing runs and every item is lost with
unreadable_notebook."""
RAW_TEXT = '{"cells": [ '
LOSES = {item: "unreadable_notebook" for item in (
    "returns_to_go.random_batches",
    "policy_loss.reinforce_value",
    "policy_loss.reinforce_gradient_exact",
    "policy_loss.ppo_value",
    "policy_loss.ppo_gradient",
    "policy_loss.ppo_clip_both_signs",
    "policy_loss.ppo_old_logp_frozen",
    "policy_loss.ppo_equals_reinforce_at_ratio_one",
    "exact_return.known_policies",
    "exact_return.random_theta_horizons",
    "exact_return.gradient",
    "training.reinforce",
    "training.ppo",
    "exercises.changed_seed",
    "exercises.frozen_reference",
    "exercises.horizon_change",
    "exercises.clipping_signs",
    "exercises.sampled_vs_exact",
    "horizon.values",
    "horizon.first_moves",
    "horizon.prediction",
    "concepts.q1",
    "concepts.q2",
    "concepts.q3",
    "concepts.q4",
)}
