"""The examples in the DSL's docstrings run and say what they show."""

import doctest
import importlib

import pytest

# By name: `horde.http` is also the name of the request builder the package exports.
MODULES = ["horde.assertions", "horde.bench", "horde.chains", "horde.checks", "horde.cookies", "horde.couchdb", "horde.http",
           "horde.injection", "horde.simulation", "horde.sql", "horde.cql",
           "horde.testing"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch):
    monkeypatch.delenv("users", raising=False)
    failures, attempted = doctest.testmod(importlib.import_module(name))
    assert attempted > 0
    assert failures == 0
