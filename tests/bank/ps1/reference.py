"""The reference answers exactly as the source notebook gives them: must get full marks."""
LOSES = {}
