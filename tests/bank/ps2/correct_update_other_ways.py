"""ppo_update written differently from the reference, and just as correct: must get full marks.

* advantages normalised per minibatch with the population std (numpy's ddof 0), as CleanRL
  normalises each minibatch;
* the shuffle is a NumPy permutation seeded from the given generator, cut with torch.split;
* the policy and critic are evaluated on the whole batch and then indexed;
* the objective is called with keyword arguments;
* the global gradient norm is clipped by hand (torch.linalg.vector_norm over all gradients);
* the statistics are computed inline instead of through update_statistics, with the clip
  fraction as a count divided by B.
"""
CELLS = {
    "ppo_update": '''def ppo_update(batch, actor_mean, log_std, critic, optimizer, config, generator, objective):
    """PPO's update, minibatch-normalised, with a hand-written gradient clip."""
    size = batch["advantages"].shape[0]
    parameters = [p for group in optimizer.param_groups for p in group["params"]]
    rng = np.random.default_rng(int(torch.randint(0, 2 ** 31 - 1, (1,), generator=generator)))
    for epoch in range(config.epochs):
        permutation = torch.from_numpy(rng.permutation(size))
        for index in torch.split(permutation, config.minibatch):
            distribution = policy(actor_mean, log_std, batch["observations"])
            all_values = critic(batch["observations"])[:, 0]
            mb_adv = batch["advantages"][index]
            mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std(unbiased=False) + 1e-8)
            loss = objective(
                logp_new=distribution.log_prob(batch["actions"]).sum(dim=1)[index],
                logp_old=batch["logp"][index], advantages=mb_adv, values=all_values[index],
                returns=batch["returns"][index], entropy=distribution.entropy().sum(dim=1)[index],
                eps=config.eps, c1=config.c1, c2=config.c2)
            for p in parameters:
                p.grad = None
            loss.backward()
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in parameters]))
            scale = torch.clamp(config.max_norm / (norm + 1e-6), max=1.0)
            for p in parameters:
                p.grad.mul_(scale)
            optimizer.step()
    with torch.no_grad():
        distribution = policy(actor_mean, log_std, batch["observations"])
        log_ratio = distribution.log_prob(batch["actions"]).sum(dim=1) - batch["logp"]
        ratio = torch.exp(log_ratio)
        outside = int(torch.count_nonzero(torch.abs(ratio - 1.0) > config.eps))
        return {"clip_fraction": outside / size,
                "approx_kl": float(torch.mean(ratio - 1.0 - log_ratio)),
                "entropy": float(distribution.entropy().sum(dim=1).mean())}
''',
}
LOSES = {}
