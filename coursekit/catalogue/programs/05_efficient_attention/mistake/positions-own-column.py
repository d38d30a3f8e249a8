# description: sinusoidal_positions gives each column its own exponent j/d_model
# source: written for this catalogue
# replaces: sinusoidal_positions
# loses: sinusoidal_positions
# symptom: (2i+1) / d_model

def sinusoidal_positions(num_tokens, d_model):
    p = np.arange(num_tokens)[:, None]
    j = np.arange(d_model)[None, :]
    angles = p / 10000 ** (j / d_model)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))
