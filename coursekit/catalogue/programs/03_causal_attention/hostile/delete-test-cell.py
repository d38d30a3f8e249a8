# description: causal_mask blocks the diagonal, and its hidden test cell is deleted
# source: written for this catalogue
# replaces: causal_mask
# loses: causal_mask
# baseline: mask-includes-diagonal
# transform: drop_grade_cell causal_mask

def causal_mask(num_tokens):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool))
