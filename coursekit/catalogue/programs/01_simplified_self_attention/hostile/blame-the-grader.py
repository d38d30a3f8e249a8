# description: a softmax that fails inside NumPy, with no frame of the student's own code on the
#   stack (a library function bound to the name): the kernel once said so and the judge believed
#   it, reporting "GRADER ERROR ... not your fault" on every case
# source: written for this catalogue
# replaces: softmax
# loses: softmax
# baseline: softmax-wrong-axis

import functools

softmax = functools.partial(np.linalg.cholesky)
