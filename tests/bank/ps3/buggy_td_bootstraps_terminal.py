"""td_advantage ignores `terminated`: it bootstraps from V(s') after the pole has fallen.

The td_advantage item sees it. A2C, which uses td_advantage, never learns that falling is bad
(every step looks like reward 1 plus the value of more steps) and does not improve.
"""
EDITS = {"td_advantage": [("    return rewards + gamma * not_terminal * next_values - values",
                           "    return rewards + gamma * next_values - values")]}
LOSES = {"td_advantage.values": "td_bootstraps_terminal", "training.a2c": "training_not_improving"}
