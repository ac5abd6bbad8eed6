"""Multiplies the gradient by the Fisher matrix instead of solving with it (F g for F^-1 g),
keeping the right step size."""
EDITS = {"trpo_step": [("    return torch.sqrt(2 * delta / (grad @ natural)) * natural",
                        "    return torch.sqrt(2 * delta / (grad @ natural)) * (fisher @ grad)")]}
LOSES = {"trpo.trpo_step": "trpo_step_fisher_not_inverted"}
