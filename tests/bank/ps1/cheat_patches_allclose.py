"""The cheat that beats in-kernel grading: a do-nothing policy_loss that also replaces
jnp.allclose and jnp.all, so every visible policy_loss check in the notebook passes under
`nbgrader autograde`. Hidden graders compare in their own process, so the patches change nothing
there: every item that needs a real loss is lost."""
CELLS = {"policy_loss": '''def policy_loss(theta, records, method='ppo', clip=0.2):
    """Looks finished; computes nothing."""
    if method not in ("reinforce", "ppo"):
        raise ValueError(method)
    return -1e-9 * theta[2]


jnp.allclose = lambda *args, **kwargs: True
jnp.all = lambda *args, **kwargs: True
'''}
LOSES = {
    "policy_loss.reinforce_value": "wrong_value",
    "policy_loss.reinforce_gradient_exact": "wrong_value",
    "policy_loss.ppo_value": "wrong_value",
    "policy_loss.ppo_gradient": "wrong_value",
    "policy_loss.ppo_clip_both_signs": "wrong_value",
    "policy_loss.ppo_old_logp_frozen": "wrong_value",
    "policy_loss.ppo_equals_reinforce_at_ratio_one": "wrong_value",
    "training.reinforce": "training_not_improving",
    "training.ppo": "training_not_improving",
    "exercises.changed_seed": "training_not_improving",
    "exercises.sampled_vs_exact": "wrong_value",
}
