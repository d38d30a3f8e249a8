# description: padding_mask as the negation of "position < length", with expand and view
# source: written for this catalogue
# replaces: padding_mask

def padding_mask(lengths, num_tokens):
    batch = lengths.shape[0]
    positions = torch.arange(num_tokens).expand(batch, num_tokens)
    real = positions < lengths.view(batch, 1)
    return (~real).view(batch, 1, num_tokens)
