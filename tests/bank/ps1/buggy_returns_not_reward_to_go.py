"""returns_to_go gives every step the whole episode's return (the sum over all steps, broadcast
along time) instead of the reward still to come.

Used as the REINFORCE target this is still unbiased in expectation (earlier rewards do not depend
on later actions), only noisier, so the exact-enumeration gradient item and training can pass;
but returns_to_go itself and every loss value on sampled batches are wrong. One-step batches
(the clip-sign item) are unaffected. The ratio-one item names the bug too.
"""
CELLS = {
    "returns_to_go": '''def returns_to_go(rewards):
    """Return of the episode, credited to every step."""
    episode_return = jnp.sum(rewards, axis=0, keepdims=True)
    return jnp.broadcast_to(episode_return, rewards.shape)
''',
}
LOSES = {
    "returns_to_go.random_batches": "returns_not_reward_to_go",
    "policy_loss.reinforce_value": "returns_not_reward_to_go",
    "policy_loss.ppo_value": "returns_not_reward_to_go",
    "policy_loss.ppo_gradient": "returns_not_reward_to_go",
    "policy_loss.ppo_equals_reinforce_at_ratio_one": "returns_not_reward_to_go",
}
