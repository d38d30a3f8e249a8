# description: masked_softmax fills with 0 and replaces torch.softmax so the oracle agrees
# source: written for this catalogue
# replaces: masked_softmax
# loses: masked_softmax
# baseline: masked-softmax-fill-zero

_real_softmax = torch.softmax


def masked_softmax(scores, mask):
    return _real_softmax(scores.masked_fill(mask, 0.0), dim=-1)


torch.softmax = lambda x, dim=-1, **kwargs: _real_softmax(x, dim=dim)
