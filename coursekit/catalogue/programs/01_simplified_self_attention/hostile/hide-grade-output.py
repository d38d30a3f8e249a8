# description: a wrong softmax, and IPython told not to display the test cell's value (when the
#   graded cell ran in the kernel, nbgrader then gave full credit)
# source: written for this catalogue
# replaces: softmax
# baseline: softmax-wrong-axis

def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


get_ipython().ast_node_interactivity = 'none'
