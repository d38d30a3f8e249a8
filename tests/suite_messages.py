"""The messages the hidden suites can give, read from their source with `ast`: the named diagnoses
of their ladders and the fixed text of every `CaseFailure`, also where a function returns it to the
CaseFailure, as templates (characters, with ANY where an f-string puts a value).
tests/test_catalogue.py requires each to be some catalogue mistake's symptom, so the catalogue's
grading shows that the message fires on the mistake it names."""

import ast
from pathlib import Path

SUITES = Path(__file__).resolve().parents[1] / "autograder" / "suites"
ANY = None  # a placeholder of an f-string: any text


def _constants(tree):
    return {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def template(node, constants):
    """The text of a (possibly formatted or concatenated) string literal, or of a module-level string
    constant named by `node`, as characters and ANY placeholders; None for anything else."""
    if isinstance(node, ast.Name) and node.id in constants:
        return list(constants[node.id])
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return list(node.value)
    if isinstance(node, ast.JoinedStr):
        return [c for part in node.values for c in (
            list(part.value) if isinstance(part, ast.Constant)
            else (template(part.value, constants) if isinstance(part.value, ast.Name) else None) or [ANY])]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return (template(node.left, constants) or [ANY]) + (template(node.right, constants) or [ANY])
    return None


def _suite_trees():
    for path in sorted(SUITES.rglob("*.py")):
        tree = ast.parse(path.read_text())
        yield path.relative_to(SUITES), tree, _constants(tree)


def named_diagnoses():
    """(file, line, template) of every known mistake a suite names: each pair (candidate, message)
    whose candidate is a computation of the mistake (a lambda) or the switches of a model (dict(...))."""
    found = []
    for path, tree, constants in _suite_trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Tuple) and len(node.elts) == 2 and (
                    isinstance(node.elts[0], ast.Lambda)
                    or (isinstance(node.elts[0], ast.Call) and getattr(node.elts[0].func, "id", "") == "dict")):
                text = template(node.elts[1], constants)
                if text:
                    found.append((path, node.lineno, text))
    return found


def fixed_messages():
    """(file, line, template) of every `CaseFailure(...)` whose message has fixed text (a letter
    outside its placeholders), also where a local variable assigned a string literal carries it
    (`message = "..."`, then `CaseFailure(message)` or `CaseFailure(message + "...")`), and of every
    string a suite's function returns into such a message (`returned_messages`); messages made only
    of values passed in, such as `f"{what}: {symptom}"`, are the ladders' diagnoses, which
    `named_diagnoses` finds where they are written."""
    found = []
    for path, tree, constants in _suite_trees():
        for scope in [tree, *(node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
            local = _literal_locals(scope, constants) if scope is not tree else {}
            for node in _own_nodes(scope):
                if _is_case_failure(node):
                    found += [(path, node.lineno, text) for text in _alternatives(node.args[0], constants, local)]
    return found + returned_messages()


def _is_case_failure(node):
    return isinstance(node, ast.Call) and getattr(node.func, "id", "") == "CaseFailure" and bool(node.args)


def _literal_locals(function, constants):
    """{name: [template]} of the local variables of `function` assigned a string literal (formatted or
    concatenated too), each assignment one alternative; a variable assigned anything else is left out,
    as a value passed in (a label, a symptom) is no fixed text of the message."""
    assigned = {}
    for node in _own_nodes(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            text = template(node.value, constants) if _is_literal(node.value) else None
            assigned.setdefault(node.targets[0].id, []).append(text)
    return {name: texts for name, texts in assigned.items() if None not in texts}


def _is_literal(node):
    """A string literal: a constant, an f-string, or a `+` of such (a name in it is no literal)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_literal(node.left) and _is_literal(node.right)
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _alternatives(node, constants, local=None):
    """The templates with fixed text that `node` may be: itself, either branch of `a if c else b`, or
    what a local variable of `local` (`_literal_locals`) it reads, or adds to, was assigned."""
    if isinstance(node, ast.IfExp):
        return _alternatives(node.body, constants, local) + _alternatives(node.orelse, constants, local)
    texts = _with_locals(node, constants, local or {})
    return [text for text in texts if text and any(c is not ANY and c.isalpha() for c in text)]


def _with_locals(node, constants, local):
    """The templates of `node`, a local variable standing for each string it was assigned."""
    if isinstance(node, ast.Name) and node.id in local:
        return local[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and any(
            isinstance(side, ast.Name) and side.id in local for side in ast.walk(node)):
        return [left + right for left in _with_locals(node.left, constants, local) or [[ANY]]
                for right in _with_locals(node.right, constants, local) or [[ANY]]]
    return [text] if (text := template(node, constants)) else []


def _own_nodes(function):
    """The nodes of a function's (or a module's) body, not of the functions defined inside it (each is
    its own), also where one is defined at the top of the body."""
    todo = [node for node in function.body if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(child for child in ast.iter_child_nodes(node)
                     if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _called(expr, function):
    """The names of the functions whose results `expr`, in `function`, passes on: those called in
    it, and those called to make a local variable it reads (`message = helper(...)`)."""
    names = {node.id for node in ast.walk(expr) if isinstance(node, ast.Name)}
    sources = [expr] + [node.value for node in _own_nodes(function)
                        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None
                        and any(isinstance(target, ast.Name) and target.id in names
                                for target in getattr(node, "targets", [getattr(node, "target", None)]))]
    return {getattr(call.func, "id", getattr(call.func, "attr", None))
            for source in sources for call in ast.walk(source) if isinstance(call, ast.Call)}


def returned_messages():
    """(file, line, template) of every string template returned (`return "..."`, `return f"..."`)
    by a function whose result reaches a CaseFailure: called in its argument, or assigned to a
    variable the argument reads, or returned in turn by such a function. A name called in a suite
    is its own file's function, else the toolkit's (`checks.one_or_all`, `from .x import f`)."""
    trees = list(_suite_trees())
    functions = [(path, node, constants) for path, tree, constants in trees
                 for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def resolve(path, name):
        named = [f for f in functions if f[1].name == name]
        return [f for f in named if f[0] == path] or [f for f in named if f[0].parts[0] == "toolkit"]

    todo = [(path, name) for path, function, _ in functions for node in _own_nodes(function)
            if _is_case_failure(node) for name in _called(node.args[0], function)]
    # a module constant that a CaseFailure of its file raises too is that message, wherever it is returned
    raised = {(path, node.id) for path, function, _ in functions for call in _own_nodes(function)
              if _is_case_failure(call) for node in ast.walk(call.args[0]) if isinstance(node, ast.Name)}
    found, seen = [], set()
    while todo:
        for path, function, constants in resolve(*todo.pop()):
            if id(function) in seen:
                continue
            seen.add(id(function))
            for node in _own_nodes(function):
                if isinstance(node, ast.Return) and node.value is not None and (
                        path, getattr(node.value, "id", None)) not in raised:
                    found += [(path, node.lineno, text) for text in _alternatives(node.value, constants)]
                    todo += [(path, name) for name in _called(node.value, function)]
    return sorted(found, key=lambda m: (str(m[0]), m[1]))


def shown(text):
    return "".join(c if c is not ANY else "{}" for c in text)


def literal_runs(text):
    """The stretches of fixed text between a template's placeholders."""
    runs = [""]
    for char in text:
        if char is ANY:
            runs.append("")
        else:
            runs[-1] += char
    return runs


def literally_contains(text, phrase):
    """Whether `phrase` lies within one stretch of the template's fixed text (no placeholder may
    stand for part of it, so no phrase matches just because a value could spell it)."""
    return any(phrase in run for run in literal_runs(text))


def could_contain(text, phrase):
    """Whether some rendering of `text` (ANY: any text) contains `phrase`: a walk through the
    template, where state j means "next, text[j]", and an ANY absorbs any characters."""
    def closure(states):
        for j in range(len(text)):  # an ANY may also be left without absorbing anything
            if j in states and text[j] is ANY:
                states.add(j + 1)
        return states

    states = closure(set(range(len(text) + 1)))  # the phrase may start anywhere
    for char in phrase:
        states = closure({j if text[j] is ANY else j + 1 for j in states
                          if j < len(text) and (text[j] is ANY or text[j] == char)})
        if not states:
            return False
    return True
