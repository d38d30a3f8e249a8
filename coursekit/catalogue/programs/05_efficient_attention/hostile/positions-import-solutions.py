# description: sinusoidal_positions imports the reference and returns its answer
# source: written for this catalogue
# replaces: sinusoidal_positions
# loses: sinusoidal_positions

def sinusoidal_positions(num_tokens, d_model):
    from solutions import sinusoidal_positions as reference
    return reference(num_tokens, d_model)
