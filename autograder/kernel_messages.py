"""What the judge keeps of a kernel's messages (its outputs): how much text they hold, and text that every file
can hold. Both walk a message without recursion: a kernel chooses how deeply its messages nest."""


def text_size(value: object) -> int:
    """About how many bytes `value` (a message's content: text, lists, dicts) holds, at least 8 for
    each value (an empty list counted nothing: r44's 5 million of them passed the output budget)."""
    size, todo = 0, [value]
    while todo:
        item = todo.pop()
        size += len(item) if isinstance(item, str | bytes) else 8
        if isinstance(item, dict):
            size += sum(len(str(key)) for key in item)
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            todo.extend(item)
    return size


def _encodable(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:  # a lone surrogate: shown as its escape, \ud800
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def encodable(value: object) -> object:
    """`value` (a message's content, decoded from JSON: dicts, lists, strings) with every string in it, keys too,
    one that UTF-8 can hold. JSON may spell a lone surrogate ("\\ud800"), which no UTF-8 file holds, and r63's
    kernel printed one (a session packing its messages with `ensure_ascii`): nbformat could not write the
    autograded notebook, and a notebook handed in as valid was not graded. Containers are changed in place."""
    if isinstance(value, str):
        return _encodable(value)
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            for key in [key for key in item if isinstance(key, str) and _encodable(key) is not key]:
                item[_encodable(key)] = item.pop(key)
            entries = item.items()
        elif isinstance(item, list):
            entries = enumerate(item)
        else:
            continue
        for where, entry in list(entries):
            if isinstance(entry, str):
                item[where] = _encodable(entry)
            elif isinstance(entry, dict | list):
                todo.append(entry)
    return value
