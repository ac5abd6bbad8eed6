"""`rlcourse web`: the submission service (docs/architecture.md)."""
