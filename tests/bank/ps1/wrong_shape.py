"""returns_to_go returns each episode's total reward, shape [batch], instead of an array of the
rewards' shape [horizon, batch].

returns_to_go itself fails with bad_output (wrong shape; a [1, 1] input still passes, since its
one value is right). policy_loss multiplies that [batch] array with [horizon, batch]
log-probabilities, and broadcasting silently credits every step with the whole episode's return:
the loss items (the ratio-one item included) then see exactly the returns_not_reward_to_go
bug and say so. As for that bug, the
exact-enumeration REINFORCE gradient is unaffected (the whole-episode return is unbiased), and
training still works.
"""
CELLS = {
    "returns_to_go": '''def returns_to_go(rewards):
    """Total reward of each episode."""
    return jnp.sum(rewards, axis=0)
''',
}
LOSES = {
    "returns_to_go.random_batches": "bad_output",
    "policy_loss.reinforce_value": "returns_not_reward_to_go",
    "policy_loss.ppo_value": "returns_not_reward_to_go",
    "policy_loss.ppo_gradient": "returns_not_reward_to_go",
    "policy_loss.ppo_equals_reinforce_at_ratio_one": "returns_not_reward_to_go",
}
