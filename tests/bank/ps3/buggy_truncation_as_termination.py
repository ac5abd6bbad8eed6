"""gae treats a time-limit end as a termination: no bootstrap at truncated steps.

Both gae items see it (each has a truncated step). PPO on CartPole still learns within the budget.
"""
EDITS = {"gae": [("    not_terminal = 1.0 - terminated.astype(np.float64)\n",
                  "    not_terminal = 1.0 - (terminated | truncated).astype(np.float64)\n")]}
LOSES = {"gae.values": "truncation_as_termination", "gae.limits": "truncation_as_termination"}
