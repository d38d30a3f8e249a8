"""Three of nbgrader's costs that the driver of `coursekit autograde` pays once per run instead of
once per submission. Without them, the driver's share of a submission (`prepare` and `save`, 20
submissions of 01, no cluster) fell from 146 ms to 79 ms.

- nbgrader opens a `Gradebook` nine times per submission, and each one creates a new SQLAlchemy
  engine, with an empty cache of compiled queries, so every query was compiled again (440
  compilations for 1,400 queries on 20 submissions). Here, one engine per database serves every
  `Gradebook` of the run; each `Gradebook` still closes its connections when it closes.
- Each of those `Gradebook`s also reads the database's table names and has SQLAlchemy check every
  table of nbgrader's schema (`create_all`), about 9 ms an open. Here, the first `Gradebook` of
  an engine does both, and makes any table missing; the others skip them.
- nbgrader checks each cell's nbgrader metadata with `jsonschema.validate`, which first checks the
  schema itself against JSON Schema's own metaschema: 90% of the time of `CheckCellMetadata`,
  which runs twice per submission. Here, the schema is checked once; every cell is still checked
  against it, with the same errors.

Nothing changes what nbgrader computes or writes: the tests that compare the command with
`nbgrader autograde` (tests/test_class_grading.py) compare their gradebooks and notebooks.
`lean_nbgrader()` applies them for the lifetime of a `with` block (the driver's), and disposes of
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

    schema_ready = set()  # the engines whose tables the first Gradebook has checked and made
    inspect, metadata = nbgrader.api.inspect, nbgrader.api.Base.metadata

    def inspect_once(engine):
        return _TablesMade() if engine in schema_ready else inspect(engine)

    def create_all_once(bind=None, **options):
        if bind not in schema_ready:
            type(metadata).create_all(metadata, bind=bind, **options)
            schema_ready.add(bind)

    schema_module = metadata_format.jsonschema
    nbgrader.api.create_engine = one_engine
    nbgrader.api.inspect, metadata.create_all = inspect_once, create_all_once
    metadata_format.jsonschema = _SchemaCheckedOnce(jsonschema)
    _active = True
    try:
        yield
    finally:
        _active = False
        nbgrader.api.create_engine, nbgrader.api.inspect = create_engine, inspect
        del metadata.create_all  # the class's own method again
        metadata_format.jsonschema = schema_module
        for engine in engines.values():
            engine.dispose()


class _TablesMade:
    """What `Gradebook` asks of the inspector of an engine whose tables exist: that there are some
    (it creates nbgrader's alembic version table only in a new database)."""

    def get_table_names(self):
        return ["(made by this run's first Gradebook)"]


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
