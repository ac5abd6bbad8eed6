"""Keeps the running return in a global between calls, so each episode starts from the previous
episode's G_0 instead of from zero.

Both returns items see it: values gain gamma**(T-1-t) times the carried total, and the same
episode gives different returns on a second call. REINFORCE's weights then mix in the previous
episode's return, and it does not learn from the graders' seeds.
"""
CELLS = {"discounted_returns": '''running_return = 0.0


def discounted_returns(rewards, gamma):
    """Reward-to-go (with a running total that is never reset: the bug)."""
    global running_return
    returns = np.zeros(len(rewards))
    for t in reversed(range(len(rewards))):
        running_return = rewards[t] + gamma * running_return
        returns[t] = running_return
    return returns
'''}
LOSES = {
    "discounted_returns.values": "returns_leak_across_episodes",
    "discounted_returns.calls_are_independent": "returns_leak_across_episodes",
    "training.reinforce": "training_not_improving",
}
