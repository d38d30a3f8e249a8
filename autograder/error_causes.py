"""Exceptions whose own words name their cause, whatever the step: how NumPy, torch and Python word them, and the
cause the student reads (`harness._describe_error` shows it), and how they word shapes that do not fit. The judge
reads them from the harness, which imports them from here."""

import re


# Exceptions whose own words name their cause, whatever the step: (how NumPy, torch or Python
# word it, the cause the student reads).
def error_cause(said: str) -> str | None:
    """The cause ERROR_CAUSES gives for an exception worded `said`, or None: its own words name it."""
    return next((cause for phrases, cause in ERROR_CAUSES if any(phrase in said for phrase in phrases)),
                SHAPE_AS_NUMBER if _a_shape_as_numbers(said) else None)


# NumPy's words for arrays that do not broadcast: "... together with shapes (6,6) (2,)"
_BROADCAST_SHAPES = re.compile(r"could not be broadcast together with shapes ((?:\([\d,]*\) ?)+)")


def _a_shape_as_numbers(said):
    """NumPy could not broadcast an array of several axes with one of one axis holding as many entries as the
    other has axes (and not as many as its last axis, which would broadcast): a whole shape, np.sqrt(K.shape)
    say, where one of its lengths belongs."""
    found = _BROADCAST_SHAPES.search(said)
    if found is None:
        return False
    shapes = [tuple(int(n) for n in group.split(",") if n) for group in re.findall(r"\(([\d,]*)\)", found.group(1))]
    return any(len(vector) == 1 and len(other) >= 2 and vector[0] == len(other) != other[-1]
               for vector in shapes for other in shapes)


SHAPE_AS_NUMBER = ("an array of one entry per axis of another meets it: is a whole `.shape` used where one of its "
                   "lengths belongs (np.sqrt(K.shape), say, where the scale is the square root of one axis's length)?")


ERROR_CAUSES = (
    # 10000 ** (-two_i // d_model): both whole numbers, and NumPy raises where a power of them would be a fraction
    (("Integers to negative integer powers are not allowed",),
     "a whole number is raised to a negative whole power (an integer array as base and exponent, such as an "
     "exponent made with // or a base written 10000), which NumPy refuses, its result being a fraction: a float "
     "base (10000.0) or a fractional exponent (true division /) gives floats"),
    # scipy's softmax and cosine distance, say: the students' environment has NumPy, torch and matplotlib
    (("No module named",),
     "it imports a module that the course's environment does not have (scipy, say): NumPy and torch, which the "
     "notebook imports, are all a step needs"),
    (("incompatible dimensions for cross product",),
     "np.cross takes the cross product, a vector perpendicular to two vectors of 3 entries (2-d ones give one "
     "number of it), which other lengths do not have; the dot product adds the products a_i b_i into one number"),
    (("axes don't match array",),
     "a transpose given its axes one by one (K.transpose(0, 2, 1), np.transpose(K, (1, 0))) fits arrays of "
     "exactly that many axes; to swap the last two, whatever comes before them: np.swapaxes(K, -1, -2)"),
    (("view size is not compatible with input tensor's size and stride",),
     "`.view` on a tensor whose memory a transpose reordered; use .reshape, or call .contiguous() before .view"),
    (("'float' object is not callable",),
     "it calls a number as if it were a function; does an attribute that should hold a module (an "
     "nn.Dropout, say) hold the number it was built from?"),
    # NumPy's .size is the count of entries, a whole number, where torch's x.size(dim) is a method
    (("'int' object is not callable",),
     "it calls a whole number as if it were a function: is it NumPy's .size, the count of an array's "
     "entries (torch's x.size(dim) is a method; NumPy reads the size of one axis as x.shape[dim]), or an "
     "attribute that should hold a module, holding the number it was built from?"),
    # NumPy's .size indexed as if it were a shape (K.size[-1]): torch's size is a method, whose words differ
    (("'int' object is not subscriptable",),
     "a whole number is indexed ([-1]) as if it held a shape: NumPy's .size is the count of all an array's entries, "
     "one number, so the width of one axis is read from the shape, x.shape[dim] (torch's x.size(dim) is a method, "
     "called with its axis); or a size already read from a shape is indexed again"),
    (("'numpy.ndarray' object has no attribute", "can't assign a numpy.ndarray to a torch"),
     "torch and NumPy mixed: a torch method called on a NumPy array, or a NumPy array written into a torch "
     "tensor; NumPy arrays have their own functions (np.expand_dims for .unsqueeze, .reshape for .view, "
     "np.concatenate for torch.cat): stay in one library"),
    # torch's own functions word a NumPy argument like a wrong call ("argument 'input'"), so the
    # signature's text would blame the step's own parameters
    (("must be Tensor, not numpy.ndarray", "'numpy.ndarray' and 'Tensor'", "'Tensor' and 'numpy.ndarray'"),
     "torch and NumPy mixed: a torch function (torch.matmul, torch.softmax, ...) given a NumPy array, or a NumPy "
     "array and a tensor combined by an operator (@, *); NumPy's functions take arrays and torch's take tensors: "
     "stay in the library the step's inputs come from"),
    (("cannot assign module before Module.__init__() call", "cannot assign parameters before Module.__init__()"),
     "an nn.Module's __init__ assigns a layer before calling super().__init__(): that call sets up where a "
     "module keeps its layers, so it comes first"),
    (("batch1 must be a 3D tensor", "batch2 must be a 3D tensor"),
     "torch.bmm takes 3-d batches only, so a single sequence (num_tokens, d_in) fails; @ (torch.matmul) "
     "multiplies the last two axes and works with or without a batch"),
    (("truth value of an array with more than one element is ambiguous",
      "Boolean value of Tensor with more than one value is ambiguous"),
     "an array used where Python needs one True or False: `if array:`, `and`/`or` between arrays, or Python's "
     "built-in max, min or sorted on arrays, which compare whole rows; NumPy's and torch's own functions "
     "(np.maximum of two arrays, np.max of one, .any(), &, |) work entry by entry"),
    (("unexpected keyword argument 'dim'", "unexpected keyword argument 'keepdim'"),
     "a NumPy function given torch's keywords (dim=, keepdim=): NumPy names them axis= and keepdims=; stay in "
     "one library's words"),
    (("only length-1 arrays can be converted", "only 0-dimensional arrays can be converted",
      "only one element tensors can be converted"),
     "a function of the math module called on an array; math.sin, math.exp and friends take one number, "
     "np.sin and np.exp (or torch's) work on every entry"),
    (("must be tuple of Tensors, not Tensor", "cat() takes from 1 to 2 positional arguments",
      "stack() takes from 1 to 2 positional arguments"),
     "torch.cat and torch.stack take the tensors to join as ONE list (or tuple), then dim; here they were "
     "passed one by one, or a single tensor in place of the list"),
    (("must be tuple of Tensors, not generator",),
     "torch.cat and torch.stack got a generator, (f(t) for t in ...), where they take a list (or tuple) of "
     "tensors: build it in square brackets, [head(x) for head in self.heads]"),
    # torch's tensor makers word a float as their first size like a wrong call of theirs
    (("ones() takes 1 positional argument but", "zeros() takes 1 positional argument but",
      "empty() takes 1 positional argument but"),
     "a tensor maker (torch.ones, torch.zeros, torch.empty) got a size that is a float: a size computed with / "
     "(// keeps it whole), or a float passed where a count belongs (a dropout rate in context_length's place, "
     "say: are the arguments passed on in the order of each signature?)"),
    (("'Tensor' object has no attribute 'append'", "'Tensor' object has no attribute 'extend'"),
     "a list's method called on a tensor: a tensor has a fixed size and cannot grow in place; joining "
     "tensors (torch.cat) makes a new, longer one, which is kept in place of the old"),
    (("must be tuple of ints,but got float", "must be tuple of ints, not float"),
     "a size given to view, reshape or a tensor constructor is a float: / always gives one, even where the "
     "division is exact; sizes are whole numbers (//)"),
    (("must be Tensor, not int", "must be Tensor, not float"),
     "a torch function (torch.sqrt, torch.exp, ...) got a plain Python number, such as a size read from .shape; "
     "it takes a tensor: on a plain number use math.sqrt or ** 0.5"),
    (('is missing the required "forward" function',),
     "a module without a forward method was called: an nn.ModuleList (or nn.ModuleDict) only holds modules "
     "and has no forward of its own, so call each module in it; in a class of your own, check that forward "
     "is spelled so and indented inside the class"),
    (("Only Tensors of floating point and complex dtype can require gradients",),
     "an nn.Parameter (or requires_grad) made of a bool or integer tensor: only floats can be trained; a "
     "mask is no trained weight: keep it with self.register_buffer (or as a plain tensor)"),
    (("Can't call numpy() on Tensor that requires grad",),
     "NumPy was given a tensor that autograd tracks (np.concatenate, np.exp ... on a layer's output): NumPy "
     "cuts the path the gradients take back to the weights, so a layer's forward stays in torch (torch.cat, "
     "torch.exp ...)"),
    (("only integer tensors of a single element can be converted to an index",),
     "a tensor of several values was used where one index is expected (a slice bound such as x[:, lengths:], "
     "or range(t)): an index or a slice bound is one number, so take the values one at a time"),
    (("~ (operator.invert) is only implemented on integer and Boolean-type tensors",),
     "~ inverts a bool (or integer) tensor only, and this one holds floats: torch.ones (and torch.tril or triu of it) "
     "makes floats unless given dtype=torch.bool; build the mask as bool, or compare (== 0) where ~ was meant"),
    (("too many values to unpack", "not enough values to unpack"),
     "something was unpacked into more or fewer names than it holds: a shape holds one size per axis, so `b, "
     "num_tokens = x.shape` fails on an x of three axes; name every axis (`b, num_tokens, _ = x.shape`) or index "
     "the one needed (x.shape[1])"),
    (("only supports boolean masks", "where expected condition to be a boolean tensor"),
     "masked_fill (or torch.where) got a mask of numbers, not of True/False: it takes a torch.bool mask. Is the "
     "mask built from torch.ones (whose torch.triu holds floats), or are the scores handed over where the mask "
     "goes (the two arguments of masked_softmax(scores, mask) in the other order)?"),
    (("'torch.return_types.",),
     "tensor.max(dim=...) (and .min, .sort, .topk) returns a pair, (values, indices), not the values alone: take "
     "its .values, or use torch.amax (torch.amin), which returns the values only"),
    (("as a data type",),
     "NumPy's array makers (np.zeros, np.ones, np.empty, np.full) take the shape as ONE tuple, np.zeros((rows, "
     "cols)): a second number is read as the dtype (torch.zeros takes the sizes one by one, NumPy does not)"),
    (("only integer scalar arrays can be converted to a scalar index",),
     "an array was given where one whole number belongs: np.max(a, b) (np.min too) reads b as the axis, not as a "
     "second array to compare (the entry-by-entry larger of two arrays is np.maximum(a, b)); and a Python list "
     "cannot be indexed by an array"),
    (("input tensor must have at least 2 dimensions",),
     "torch.triu (or tril) got a tensor of one axis, which has no diagonal: the triangle is cut from a matrix, so "
     "make it (num_tokens, num_tokens), torch.ones(num_tokens, num_tokens), not torch.ones(num_tokens)"),
    # 'method', 'method-wrapper' (a built-in's __len__) and 'builtin_function_or_method' (a tensor's .size)
    # ... and where a number is made of it: float((a * b).sum) is "float() argument must be ..., not 'method'"
    (("method' and '", "method-wrapper' and '", "and 'method", "and 'builtin_function_or_method'", "method' object is not subscriptable",
      "method-wrapper' object is not subscriptable", "not 'builtin_function_or_method'", "not 'method'"),
     "a method is used without calling it (cache.__len__ for len(cache), x.size for x.size()): a method gives its "
     "value only when it is called, with parentheses"),
    # x @ W.weight.T + W.bias by hand: a layer made with bias=False (qkv_bias=False) keeps None as its bias
    (("and 'NoneType'", "'NoneType' and '"),
     "None is added to (or multiplied with) a value: the .bias of a layer made with bias=False (qkv_bias=False) "
     "is None, so x @ W.weight.T + W.bias fails where calling the layer, W(x), adds a bias only where there is "
     "one; or an optional argument left None (mask=None) is used as if it were given (test `is None` first)"),
    (("'NoneType' object has no attribute", "object of type 'NoneType' has no len()",
      "'NoneType' object is not subscriptable"),
     "something is None where a value was expected: an optional argument (cache=None, mask=None) used "
     "as if it were given (test `is None` first), or the result of a method that works in place and "
     "returns nothing"),
    # a module used without its import in the notebook (math.sqrt), or a name read before it is made
    (("is not defined",),
     "a name is read that the notebook never made: a module is used only after its import (import math, say, in "
     "the cell or one run before it), a function or variable only after the cell that makes it has run, and a name "
     "is spelled as where it was made"),
    # np.linalg.norm(a, axis=1) of a vector, the matrix version's axis kept
    (("is out of bounds for array of dimension",),
     "it names an axis the array does not have (axis=1 of a vector, say): an array of n axes has axes 0 to n - 1, or "
     "-1 for the last, so a vector's one axis is 0 (or -1), and axis=1 belongs to an array of rows"),
    # torch's words for the same: softmax(dim=2) written for a batch (batch, T, T), given one (T, T) matrix
    (("Dimension out of range",),
     "it names a dim the tensor does not have (dim=2 of one (T, T) matrix, say): a dim counted from the front "
     "fits tensors of one number of dims only, where one counted from the back (-1 for the last) is the same "
     "dim of a matrix, a batch and a batch of heads"),
    # last: the kinds of object above have causes of their own
    (("object has no attribute", "module 'numpy' has no attribute", "module 'torch' has no attribute"),
     "it reads an attribute that does not exist: a module's own (self.name) must be set in __init__ and spelled "
     "alike where it is read, and NumPy's and torch's names differ (np.softmax does not exist, say)"),
)
# How NumPy and torch word an operation on arrays whose shapes do not fit: the other kind of
# exception the grader can name without knowing the code.
SHAPE_MISMATCH = ("must match the size of tensor", "Sizes of tensors must match", "Expected size for first two dimensions",
                  "shapes cannot be multiplied", "could not be broadcast", "mismatch in its core dimension",
                  "size mismatch", "is invalid for input of size", "does not match the broadcast shape",
                  "could not broadcast input array")
