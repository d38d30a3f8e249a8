"""Two of nbgrader's costs that the driver of `coursekit autograde` pays once per run instead of
once per submission. Without them, the driver's share of a submission (`prepare` and `save`, 20
submissions of 01, no cluster) fell from 146 ms to 79 ms.

- nbgrader opens a `Gradebook` nine times per submission, and each one creates a new SQLAlchemy
  engine, with an empty cache of compiled queries, so every query was compiled again (440
  compilations for 1,400 queries on 20 submissions). Here, one engine per database serves every
  `Gradebook` of the run; each `Gradebook` still closes its connections when it closes.
- nbgrader checks each cell's nbgrader metadata with `jsonschema.validate`, which first checks the
  schema itself against JSON Schema's own metaschema: 90% of the time of `CheckCellMetadata`,
  which runs twice per submission. Here, the schema is checked once; every cell is still checked
  against it, with the same errors.

Nothing changes what nbgrader computes or writes: the tests that compare the command with
`nbgrader autograde` (tests/test_class_grading.py) compare their gradebooks and notebooks.
`lean_nbgrader()` applies both for the lifetime of a `with` block (the driver's), and disposes of
its engines at the end.
"""

import contextlib
import json

_active = False  # one block at a time patches nbgrader: a block inside another changes nothing


@contextlib.contextmanager
def lean_nbgrader():
    global _active
    if _active:
        yield
        return
    import jsonschema
    import nbgrader.api
    import nbgrader.nbgraderformat.common as metadata_format

    engines = {}
    create_engine = nbgrader.api.create_engine

    def one_engine(url, **options):
        key = (str(url), json.dumps(options, sort_keys=True, default=str))
        if key not in engines:
            engines[key] = create_engine(url, **options)
        return engines[key]

    schema_module = metadata_format.jsonschema
    nbgrader.api.create_engine = one_engine
    metadata_format.jsonschema = _SchemaCheckedOnce(jsonschema)
    _active = True
    try:
        yield
    finally:
        _active = False
        nbgrader.api.create_engine = create_engine
        metadata_format.jsonschema = schema_module
        for engine in engines.values():
            engine.dispose()


class _SchemaCheckedOnce:
    """The `jsonschema` module as nbgrader's metadata validator sees it: `validate` checks each
    schema once (it is nbgrader's own file, read again for every notebook)."""

    def __init__(self, jsonschema):
        self._jsonschema = jsonschema
        self._validators = {}  # the schema's JSON -> a validator of the schema, checked

    def validate(self, instance, schema):
        key = json.dumps(schema, sort_keys=True)
        validator = self._validators.get(key)
        if validator is None:
            cls = self._jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)  # what jsonschema.validate does first, on every call
            validator = self._validators[key] = cls(schema)
        error = self._jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error
