# description: torch.where instead of masked_fill, a mask from index comparison
# source: written for this catalogue

# %% replaces: causal_mask
def causal_mask(num_tokens):
    idx = torch.arange(num_tokens)
    return idx[None, :] > idx[:, None]


# %% replaces: masked_softmax
def masked_softmax(scores, mask):
    blocked = torch.full_like(scores, float('-inf'))
    return torch.softmax(torch.where(mask, blocked, scores), dim=-1)
