"""KL(q || p): the roles of the two Gaussians are exchanged. Equal widths hide it."""
EDITS = {'gaussian_kl': [('return torch.log(std_q / std_p) + (std_p ** 2 + (mu_p - mu_q) ** 2) / (2 * std_q ** 2) - 0.5', 'return torch.log(std_p / std_q) + (std_q ** 2 + (mu_q - mu_p) ** 2) / (2 * std_p ** 2) - 0.5')]}
LOSES = {'kl.course_values': 'kl_direction_swapped', 'kl.broadcast': 'kl_direction_swapped'}
