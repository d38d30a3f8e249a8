"""Instructor tooling: build the source notebooks, release, grade, report."""

import sys

# jsonschema (under nbformat and nbgrader) imports rfc3987_syntax, when it is installed, to check
# the "iri" string format; importing it compiles 38 lark grammars, 1.3 s of CPU in every process
# that reads a notebook: the driver and each Dask worker of `coursekit autograde`. No schema we
# validate uses that format, so these processes go without it (jsonschema treats the module as
# absent). Set before anything imports jsonschema: every entry point imports this package first.
sys.modules.setdefault("rfc3987_syntax", None)
