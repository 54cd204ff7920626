"""The docs' examples run: python/README.md's and docs/python.md's `>>>`
examples and the package's docstrings, from the repository's root (where their
paths point)."""

from __future__ import annotations

import doctest

import pytest

import zarrow
import zarrow._dataset
import zarrow._kept
import zarrow._polars
from conftest import REPO

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("page", ["python/README.md", "docs/python.md"])
def test_readme_examples(page, monkeypatch):
    monkeypatch.chdir(REPO)
    result = doctest.testfile(str(REPO / page), module_relative=False, optionflags=FLAGS)
    assert result.attempted >= 10 and result.failed == 0


@pytest.mark.parametrize("module", [zarrow, zarrow._polars, zarrow._dataset, zarrow._kept], ids=lambda m: m.__name__)
def test_docstring_examples(module, monkeypatch):
    monkeypatch.chdir(REPO)
    result = doctest.testmod(module, extraglobs={"zarrow": zarrow}, optionflags=FLAGS)
    assert result.attempted > 0 and result.failed == 0
