# description: softmax imports the reference solution and returns its answer
# source: written for this catalogue
# replaces: softmax
# loses: softmax
# baseline: softmax-unimplemented

def softmax(x, axis=-1):
    from solutions import softmax as reference
    return reference(x, axis=axis)
