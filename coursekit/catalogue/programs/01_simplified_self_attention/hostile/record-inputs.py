# description: a wrong softmax that keeps every input the grader sends it, and a cell after the
#   last solution that prints them all: the hidden test inputs in the autograded notebook and
#   the feedback, unless what that cell shows is not kept
# source: written for this catalogue
# loses: softmax
# baseline: softmax-wrong-axis

# %% replaces: softmax
SEEN = []


def softmax(x, axis=-1):
    SEEN.append(np.asarray(x).tolist())
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)


# %% extra_cell
print("RECORDED", len(SEEN), SEEN)
