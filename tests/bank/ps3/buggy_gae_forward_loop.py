"""gae runs its recursion forward in time, from the first step on: each advantage sums the TD
errors of the steps before it (restarted after each episode end) instead of those after it.

The TD errors themselves are right, so td_advantage and the lambda = 0 limit are unaffected;
the buffers of several episodes and the lambda = 1 return name the forward sum. The given PPO
agent learns from these advantages, which credit each action with what came before it, and no
longer learns (its last episodes are shorter than its first: 9.5 steps against 11.8 from the
graders' seeds); A2C, which uses td_advantage, is unaffected.
"""
EDITS = {"gae": [("    for t in reversed(range(len(deltas))):\n"
                  "        running = deltas[t] + gamma * lam * episode_goes_on[t] * running\n",
                  "    for t in range(len(deltas)):\n"
                  "        running = deltas[t] + gamma * lam * (episode_goes_on[t - 1] if t > 0 else 0.0) * running\n")]}
LOSES = {"gae.values": "gae_forward_loop", "gae.limits": "gae_forward_loop",
         "training.ppo": "training_not_improving"}
