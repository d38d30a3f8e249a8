# description: masked_softmax fills with 0, and its cell prints 40 MiB a megabyte at a time: a
#   flood the grading process once kept whole (in its memory, the autograded notebook and the
#   feedback); now the notebook keeps 16 MiB of output, and the flood costs only its own lines
# source: written for this catalogue
# replaces: masked_softmax
# loses: masked_softmax
# baseline: masked-softmax-fill-zero


def masked_softmax(scores, mask):
    return torch.softmax(scores.masked_fill(mask, 0.0), dim=-1)


for _ in range(40):
    print("x" * 2**20)
