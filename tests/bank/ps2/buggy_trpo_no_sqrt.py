"""TRPO's step size without the square root: 2 delta / (g' F^-1 g) times the natural gradient."""
EDITS = {"trpo_step": [("torch.sqrt(2 * delta / (grad @ natural))", "(2 * delta / (grad @ natural))")]}
LOSES = {"trpo.trpo_step": "trpo_step_no_sqrt"}
