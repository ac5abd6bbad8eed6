"""gae stops its trace only at terminations: after a time-limit end the next episode's TD errors
flow back into the truncated episode's advantages.

The bootstrap itself is right, so td_advantage and the limits (lambda = 0, and lambda = 1 on a
terminated episode) are unaffected; the buffer with truncations inside it names the leak.
"""
EDITS = {"gae": [("    episode_goes_on = 1.0 - (terminated | truncated).astype(np.float64)\n",
                  "    episode_goes_on = 1.0 - terminated.astype(np.float64)\n")]}
LOSES = {"gae.values": "returns_leak_across_episodes"}
