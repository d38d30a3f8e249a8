# description: padding_mask built row by row in a loop, with unsqueeze(1) and a list of rows
# source: written for this catalogue
# replaces: padding_mask

def padding_mask(lengths, num_tokens):
    rows = []
    for length in lengths.tolist():
        row = torch.zeros(num_tokens, dtype=torch.bool)
        row[length:] = True
        rows.append(row)
    return torch.stack(rows).unsqueeze(1)
