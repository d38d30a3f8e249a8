# description: dot_product's solution cell and its hidden test cell both deleted: nbgrader put the test
#   cell back after the cell before it in the release, which was gone too, failed with a KeyError, and
#   the submission was not graded on both paths (a student could choose that); now the test cell goes
#   after the nearest cell of the release the notebook still holds, and dot_product scores nothing
# source: red-team round r50
# replaces: dot_product
# loses: dot_product
# baseline: dot-product-mean
# flagged: true
# flag: its graded cell was deleted
# transform: drop_step dot_product

def dot_product(a, b):
    return np.mean(a * b)
