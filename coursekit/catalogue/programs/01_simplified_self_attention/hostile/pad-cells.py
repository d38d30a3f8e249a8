# description: a wrong softmax, and 2,000 empty Markdown cells at the end: nbgrader and nbformat cost the
#   class's driver about 0.8 ms a cell, and 300,000 of them (28 MB) held every classmate 4 minutes; now
#   intake leaves out the cells past the first 1,000, keeping the notebook as handed in, and says so
# source: red-team round r50
# replaces: softmax
# loses: softmax
# baseline: softmax-wrong-axis
# flagged: true
# flag: cells after the first 1000 were left out
# transform: pad_cells 2000

def softmax(x, axis=-1):
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
