"""Steps along the plain gradient, with the natural gradient's step size."""
EDITS = {"trpo_step": [("    return torch.sqrt(2 * delta / (grad @ natural)) * natural",
                        "    return torch.sqrt(2 * delta / (grad @ natural)) * grad")]}
LOSES = {"trpo.trpo_step": "trpo_step_plain_gradient"}
