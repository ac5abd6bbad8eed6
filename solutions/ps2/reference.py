"""The readable reference solution of ps2 (PPO with GAE, PyTorch), the same code as the source
notebook's answers. The graders never trust it: the oracle in exact.py is independent, and
tests/solutions/test_ps2_exact.py checks one against the other."""
import torch
from torch.distributions import Normal


def gaussian_kl(mu_p, std_p, mu_q, std_q):
    """KL(N(mu_p, std_p^2) || N(mu_q, std_q^2)), elementwise.

    All arguments are float64 tensors (or Python floats) that broadcast against each other;
    std_p and std_q are standard deviations (positive), not variances or log-stds.
    Returns a tensor of the broadcast shape.
    """
    return torch.log(std_q / std_p) + (std_p ** 2 + (mu_p - mu_q) ** 2) / (2 * std_q ** 2) - 0.5


def clipped_surrogate(ratio, advantages, eps=0.2):
    """Per-sample PPO objective min(r * A, clip(r, 1 - eps, 1 + eps) * A), to be maximised.

    ratio, advantages: float64 tensors of the same shape. Returns a tensor of that shape.
    """
    return torch.min(ratio * advantages, torch.clamp(ratio, 1 - eps, 1 + eps) * advantages)


def ppo_loss(logp_new, logp_old, advantages, eps=0.2):
    """The clipped policy loss to minimise: minus the mean of clipped_surrogate.

    logp_new: [B] log-probabilities of the batch's actions under the current policy (carries the
        gradient); logp_old: [B] their log-probabilities under the policy that collected them
        (a constant: no gradient flows into it); advantages: [B].
    The ratio is exp(logp_new - logp_old). Returns a scalar tensor.
    """
    ratio = torch.exp(logp_new - logp_old.detach())
    return -clipped_surrogate(ratio, advantages, eps).mean()


def compute_gae(rewards, values, next_values, terminated, truncated, gamma=0.99, lam=0.95):
    """GAE(lambda) advantages of a rollout buffer.

    All inputs have shape [T, N] (time, environment). rewards, values, next_values: float64;
    values[t] = V(s_t); next_values[t] = V of the observation step t actually reached (the final
    observation if the episode ended at step t). terminated, truncated: bool.
    A terminated step does not bootstrap; a truncated step bootstraps from next_values[t]; both
    stop the lambda-trace. The last row bootstraps from next_values[T - 1] as usual.
    Returns a float64 tensor of shape [T, N].
    """
    not_terminated = (~terminated).to(rewards.dtype)
    not_ended = (~(terminated | truncated)).to(rewards.dtype)
    deltas = rewards + gamma * not_terminated * next_values - values
    advantages = torch.zeros_like(deltas)
    running = torch.zeros_like(deltas[0])
    for t in reversed(range(deltas.shape[0])):
        running = deltas[t] + gamma * lam * not_ended[t] * running
        advantages[t] = running
    return advantages


def value_targets(advantages, values):
    """Regression targets for the critic: raw (not normalised) advantages plus values, same shape."""
    return advantages + values


def ppo_objective(logp_new, logp_old, advantages, values, returns, entropy, eps=0.2, c1=0.5, c2=0.01):
    """The total minibatch loss: ppo_loss + c1 * mean((values - returns)^2) - c2 * mean(entropy).

    All tensor arguments have shape [B]; values is the critic's output (carries gradient),
    returns are the value targets, entropy the policy's entropy at each state (carries gradient).
    Returns a scalar tensor.
    """
    policy_loss = ppo_loss(logp_new, logp_old, advantages, eps)
    value_loss = ((values - returns) ** 2).mean()
    return policy_loss + c1 * value_loss - c2 * entropy.mean()


def update_statistics(logp_new, logp_old, eps=0.2):
    """How far the policy moved: {"clip_fraction": float, "approx_kl": float}.

    clip_fraction is the fraction of samples with |r - 1| > eps; approx_kl is the mean of
    (r - 1) - log r; r = exp(logp_new - logp_old). Both are Python floats.
    """
    with torch.no_grad():
        log_ratio = logp_new - logp_old
        ratio = log_ratio.exp()
        return {"clip_fraction": ((ratio - 1).abs() > eps).double().mean().item(),
                "approx_kl": ((ratio - 1) - log_ratio).mean().item()}


# --- given in the notebook (its `given_training` cell); ppo_update needs it ----------------------
def policy(actor_mean, log_std, observations):
    """The action distribution at each observation: independent Normals, one per action axis."""
    return Normal(actor_mean(observations), log_std.exp(), validate_args=False)


def ppo_update(batch, actor_mean, log_std, critic, optimizer, config, generator, objective):
    """PPO's update on one rollout: K epochs of shuffled minibatches; returns its statistics.

    batch: a dict of float64 tensors over the rollout's B transitions, flattened:
        "observations" [B, 2], "actions" [B, 2], "logp" [B] (log-probabilities of the actions
        under the policy that collected them), "advantages" [B] (raw, from compute_gae) and
        "returns" [B] (the value targets).
    actor_mean, log_std, critic: the networks (`policy(actor_mean, log_std, obs)` is the action
        distribution, `critic(obs).squeeze(-1)` the values); optimizer steps all of their parameters.
    config: a PPOConfig; uses eps, epochs (K), minibatch (M), c1, c2 and max_norm. B is a multiple of M.
    generator: a torch.Generator for the shuffles.
    objective: the minibatch loss, with ppo_objective's signature (train passes your ppo_objective,
        or a broken one in the lab). Compute every minibatch's loss by calling
        objective(logp_new, logp_old, advantages, values, returns, entropy, config.eps, config.c1, config.c2).

    First normalise the advantages over the whole batch (subtract the mean, divide by the standard
    deviation + 1e-8). Then, in each of the K epochs, shuffle the B indices and walk through them
    in minibatches of M: compute the loss, zero the gradients, backpropagate, clip the global
    gradient norm of all parameters (actor, log-std and critic together) to config.max_norm, and
    step the optimizer. Every sample is used exactly once per epoch.

    Returns statistics of the whole batch under the updated policy, as Python floats:
    {"clip_fraction", "approx_kl"} as update_statistics computes them, and "entropy", the mean over
    the batch of the action distribution's entropy (summed over the action's two dimensions).
    """
    advantages = batch["advantages"]
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    parameters = [*actor_mean.parameters(), log_std, *critic.parameters()]
    size = advantages.shape[0]
    for _ in range(config.epochs):
        order = torch.randperm(size, generator=generator)
        for start in range(0, size, config.minibatch):
            index = order[start:start + config.minibatch]
            distribution = policy(actor_mean, log_std, batch["observations"][index])
            logp_new = distribution.log_prob(batch["actions"][index]).sum(-1)
            values = critic(batch["observations"][index]).squeeze(-1)
            loss = objective(logp_new, batch["logp"][index], advantages[index], values,
                             batch["returns"][index], distribution.entropy().sum(-1),
                             config.eps, config.c1, config.c2)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, config.max_norm)
            optimizer.step()
    with torch.no_grad():
        distribution = policy(actor_mean, log_std, batch["observations"])
        stats = update_statistics(distribution.log_prob(batch["actions"]).sum(-1), batch["logp"], config.eps)
        stats["entropy"] = distribution.entropy().sum(-1).mean().item()
    return stats
