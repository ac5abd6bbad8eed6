"""The right prediction written another way: an annotated assignment, the keys in another order,
single quotes, capitals and stray spaces, and a comment per row. The item reads the literal as
written and compares the options without case or surrounding spaces."""
CELLS = {"predict_break_it": """# Written before running the lab.
KL_PREDICTION: dict = {
    'K = 1': 'Smaller',  # a tenth of the gradient steps
    'no entropy': 'about the same ',
    'wrong bootstrap': ' About the same',
    'lambda = 1': 'about the same',
    'clip without min': 'LARGER',
    'no clip': 'much larger',
    'no gradient clipping': 'About The Same',  # Adam's steps ignore the gradient's scale
    "value loss dominates": 'about the same',
}
"""}
LOSES = {}
