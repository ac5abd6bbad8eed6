"""Discounts each reward by gamma**k from the episode's start instead of gamma**(k - t).

The returns item sees it (gamma < 1); calls stay independent of each other.
"""
CELLS = {"discounted_returns": '''def discounted_returns(rewards, gamma):
    """Reward-to-go (discounted from the start of the episode: the bug)."""
    T = len(rewards)
    discounted = np.array([gamma ** k * rewards[k] for k in range(T)])
    return np.cumsum(discounted[::-1])[::-1]
'''}
LOSES = {"discounted_returns.values": "returns_discount_from_start"}
