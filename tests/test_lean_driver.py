"""The driver's two savings on nbgrader's per-submission costs (`coursekit/lean_driver.py`): one
database engine per gradebook, and nbgrader's metadata schema checked once. That they change
nothing nbgrader computes is what tests/test_class_grading.py shows, end to end."""

import copy
import os
import warnings

import jsonschema
import nbformat
import pytest
import sqlalchemy
from nbgrader.api import Gradebook
from nbgrader.nbgraderformat import MetadataValidator, ValidationError

from coursekit.lean_driver import lean_nbgrader
from coursekit.paths import with_interpreter_on_path

GRADE_CELL = {"grade": True, "grade_id": "softmax", "locked": True, "points": 3, "schema_version": 3,
              "solution": False, "task": False}


def notebook(*metadata):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": copy.deepcopy(m)}) for m in metadata]
    return nb


@pytest.fixture(autouse=True)
def quiet_sqlalchemy(monkeypatch):
    monkeypatch.setenv("PATH", with_interpreter_on_path(os.environ)["PATH"])  # nbgrader runs `alembic`
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="nbgrader.api")
        yield


def test_every_gradebook_of_a_run_shares_one_engine(tmp_path):
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with lean_nbgrader():
        with Gradebook(url) as first, Gradebook(url) as second:
            first.add_student("ada")
            assert second.find_student("ada").id == "ada"
            assert first.engine is second.engine
            engine = first.engine
        with Gradebook(url) as third:  # after the others closed their connections
            assert third.engine is engine and third.find_student("ada").id == "ada"
    with Gradebook(url) as after, Gradebook(url) as other:
        assert after.engine is not other.engine  # nbgrader's own behaviour again
        assert after.find_student("ada").id == "ada"


def test_a_block_inside_another_leaves_nbgrader_as_the_outer_one_found_it():
    import nbgrader.api

    original = nbgrader.api.create_engine
    with lean_nbgrader():
        patched = nbgrader.api.create_engine
        with lean_nbgrader():
            assert nbgrader.api.create_engine is patched
        assert nbgrader.api.create_engine is patched
    assert nbgrader.api.create_engine is original
    assert nbgrader.api.inspect is sqlalchemy.inspect and "create_all" not in vars(nbgrader.api.Base.metadata)


def test_the_metadata_schema_is_checked_once_and_every_cell_against_it(monkeypatch):
    checks = []
    validator_class = jsonschema.validators.validator_for(MetadataValidator().schema)
    original = validator_class.check_schema.__func__
    monkeypatch.setattr(validator_class, "check_schema",
                        classmethod(lambda cls, schema: checks.append(1) or original(cls, schema)))
    cells = [dict(GRADE_CELL, grade_id=f"step-{i}") for i in range(40)]
    MetadataValidator().validate_nb(notebook(*cells))
    assert len(checks) == 40  # nbgrader: once per cell
    checks.clear()
    with lean_nbgrader():
        MetadataValidator().validate_nb(notebook(*cells))
        MetadataValidator().validate_nb(notebook(*cells))
    assert len(checks) == 1


@pytest.mark.parametrize("broken", [{"points": "three"}, {"grade": "yes"}, {"unknown": 1}],
                         ids=["points", "grade", "extra key"])
def test_broken_metadata_fails_with_nbgrader_s_own_error(broken):
    nb = notebook(dict(GRADE_CELL, **broken))
    with pytest.raises(ValidationError) as plain:
        MetadataValidator().validate_nb(copy.deepcopy(nb))
    with lean_nbgrader(), pytest.raises(ValidationError) as lean:
        MetadataValidator().validate_nb(copy.deepcopy(nb))
    assert str(lean.value) == str(plain.value)


def test_a_gradebooks_schema_is_checked_once_per_engine_and_a_new_database_still_made(tmp_path, monkeypatch):
    import nbgrader.api

    checks = []
    create_all = type(nbgrader.api.Base.metadata).create_all
    monkeypatch.setattr(type(nbgrader.api.Base.metadata), "create_all",
                        lambda self, *args, **kwargs: checks.append(1) or create_all(self, *args, **kwargs))
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with lean_nbgrader():
        for _ in range(5):
            with Gradebook(url) as gradebook:
                gradebook.update_or_create_student("ada")
    assert len(checks) == 1
    with Gradebook(url) as plain:  # nbgrader's own behaviour again, on the database made above
        assert plain.find_student("ada").id == "ada" and len(checks) == 2
        assert plain.db.execute(nbgrader.api.text("SELECT version_num FROM alembic_version")).scalar()
