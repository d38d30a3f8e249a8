"""What the judge keeps of a kernel's messages (its outputs): how much text they hold, and text that every file
can hold. One walk does both, without recursion: a kernel chooses how deeply its messages nest."""


def _encodable(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:  # a lone surrogate: shown as its escape, \ud800
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _walk(value: object, mend: bool) -> tuple[object, int]:
    """(`value`, about how many bytes it holds), with its strings made encodable where `mend`: dicts and lists in
    place, a string by its replacement. Sized before it is mended."""
    if isinstance(value, str | bytes):
        return (_encodable(value) if mend and isinstance(value, str) else value), len(value)
    size, todo = 0, [value]
    while todo:
        item = todo.pop()
        size += 8
        if isinstance(item, dict):
            size += sum(len(str(key)) for key in item)
            if mend:
                for key in [key for key in item if isinstance(key, str) and _encodable(key) is not key]:
                    item[_encodable(key)] = item.pop(key)
            entries = list(item.items())
        elif isinstance(item, list | tuple):
            entries = list(enumerate(item))
        else:
            continue
        for where, entry in entries:
            if isinstance(entry, str | bytes):
                size += len(entry)
                if mend and isinstance(entry, str) and not isinstance(item, tuple):
                    item[where] = _encodable(entry)
            else:
                todo.append(entry)
    return value, size


def text_size(value: object) -> int:
    """About how many bytes `value` (a message's content: text, lists, dicts) holds, at least 8 for
    each value (an empty list counted nothing: r44's 5 million of them passed the output budget)."""
    return _walk(value, mend=False)[1]


def encodable(value: object) -> object:
    """`value` (a message's content, decoded from JSON: dicts, lists, strings) with every string in it, keys too,
    one that UTF-8 can hold. JSON may spell a lone surrogate ("\\ud800"), which no UTF-8 file holds, and r63's
    kernel printed one (a session packing its messages with `ensure_ascii`): nbformat could not write the
    autograded notebook, and a notebook handed in as valid was not graded. Containers are changed in place."""
    return _walk(value, mend=True)[0]


def sized_and_encodable(value: object) -> tuple[object, int]:
    """`encodable(value)` and `text_size(value)` in the one walk the judge makes of each message a kernel sends."""
    return _walk(value, mend=True)
