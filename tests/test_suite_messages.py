"""The parse of the suites' messages (suite_messages) on small sources: a message a local variable
carries to its CaseFailure is found, a label or a key read into one is not taken for its text."""

import ast

import suite_messages


def _found(source):
    tree = ast.parse(source)
    found = []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))]:
        local = suite_messages._literal_locals(scope, {}) if scope is not tree else {}
        found += [suite_messages.shown(text) for node in suite_messages._own_nodes(scope)
                  if suite_messages._is_case_failure(node)
                  for text in suite_messages._alternatives(node.args[0], {}, local)]
    return sorted(found)


def test_a_message_assigned_to_a_variable_is_found_where_the_variable_is_raised():
    source = '''
def check(name, ok):
    message = ("the rows are " f"{name}: divided again")
    extra = "; leave them"
    if ok:
        raise CaseFailure(message)
    raise CaseFailure(message + " (one became nan)" + extra)
'''
    assert _found(source) == ["the rows are {}: divided again",
                              "the rows are {}: divided again (one became nan); leave them"]
    # a variable assigned anything but a literal (a helper's result, a label) leaves the message unread
    assert _found(source.replace('extra = "; leave them"', "extra = hint(name)")) == [
        "the rows are {}: divided again", "the rows are {}: divided again (one became nan){}"]


def test_a_label_or_key_read_into_a_message_is_not_its_fixed_text():
    source = '''
def check(record, symptom):
    label = record["label"]
    key = "expected_0"
    raise CaseFailure(f"{label}: {symptom} is wrong ({key})")

def nested():
    message = "one message"
    def inner():
        raise CaseFailure(message)
'''
    # the f-string's values stay placeholders; a variable of the enclosing function is not the inner one's
    assert _found(source) == ["{}: {} is wrong ({})"]


def test_every_case_failure_of_the_suites_is_read_once():
    messages = [(path, line, tuple(text)) for path, line, text in suite_messages.fixed_messages()]
    assert len(messages) == len(set(messages))
