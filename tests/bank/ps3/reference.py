"""The reference answers exactly as in the source notebook: every item must pass."""
LOSES = {}
