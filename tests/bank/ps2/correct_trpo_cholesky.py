"""TRPO's step another correct way: a Cholesky solve for F^-1 g, and the step rescaled so that its
quadratic KL (1/2) s' F s equals delta (the same s as the closed form)."""
CELLS = {"trpo_step": '''def trpo_step(grad, fisher, delta):
    """Cholesky solve, then rescale to the KL radius."""
    factor = torch.linalg.cholesky(fisher)
    direction = torch.cholesky_solve(grad.reshape(-1, 1), factor).reshape(-1)
    quadratic_kl = 0.5 * direction @ fisher @ direction
    return direction * torch.sqrt(delta / quadratic_kl)
'''}
LOSES = {}
