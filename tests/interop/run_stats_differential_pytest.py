"""Pruning by chunk statistics never changes an answer: a bounded run of
tests/interop/check_stats_differential.py (random stores, changes after the
statistics were taken, random filters; every engine with and without
statistics). The command line engine runs when a zarrow binary is found
(ZARROW_BIN, else target/{ci,release,debug}/zarrow); the full run is the
script's (see its docstring)."""

from __future__ import annotations

import os

import pytest

from conftest import REPO

import check_stats_differential as differential  # tests/interop, on sys.path (conftest)

SEED = int(os.environ.get("ZARROW_STATS_SEED", "1"))
CASES = int(os.environ.get("ZARROW_STATS_CASES", "40"))
SECONDS = float(os.environ.get("ZARROW_STATS_SECONDS", "60"))


def zarrow_binary():
    explicit = os.environ.get("ZARROW_BIN")
    if explicit:
        return explicit
    for profile in ("ci", "release", "debug"):
        candidate = REPO / "target" / profile / "zarrow"
        if candidate.is_file():
            return str(candidate)
    return None


def test_pruning_never_changes_an_answer():
    pytest.importorskip("anndata")
    pytest.importorskip("duckdb")
    pytest.importorskip("datafusion")
    binary = zarrow_binary()
    engines = [e for e in differential.ENGINES if e != "cli" or binary]
    lines = []
    outcome = differential.run(cases=CASES, seed=SEED, engines=engines, binary=binary,
                               time_limit=SECONDS, out=lines.append)
    assert outcome.passed > 0, differential.summary(outcome)
    assert outcome.failed == 0, "\n\n".join(lines[:5]) + "\n" + "\n".join(differential.summary(outcome))
