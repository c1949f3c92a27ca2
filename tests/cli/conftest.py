"""CLI test plumbing: the fuzz suite's tally of generated cases per command family, printed at the end of
the run (whether or not pytest captures output) and written to ``fuzz_cases.json`` in pytest's base temp
directory for CI to keep."""

from __future__ import annotations

import json
from collections import Counter

import pytest

_TALLY: dict[str, Counter[str]] = {"cases": Counter(), "known": Counter(), "seconds": Counter(), "exits": Counter()}


@pytest.fixture(scope="session")
def fuzz_tally():
    """``tally["cases"][family] += 1`` per generated case; ``tally["known"]`` counts cases that hit a
    known defect (listed in the test's xfail); ``tally["seconds"]`` the family's wall time;
    ``tally["exits"]["stats 2"]`` the cases of a family per exit code."""
    return _TALLY


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    cases = _TALLY["cases"]
    if not cases:
        return
    base = config._tmp_path_factory.getbasetemp() if hasattr(config, "_tmp_path_factory") else None
    record = {
        family: {
            "cases": n,
            "known_defect_cases": _TALLY["known"][family],
            "seconds": round(_TALLY["seconds"][family], 1),
            "exit_codes": {key.split()[1]: k for key, k in sorted(_TALLY["exits"].items()) if key.split()[0] == family},
        }
        for family, n in sorted(cases.items())
    }
    if base is not None:
        (base / "fuzz_cases.json").write_text(json.dumps(record, indent=2))
    terminalreporter.section("CLI fuzz: generated cases per command family")
    for family, row in record.items():
        known = f", {row['known_defect_cases']} on known defects (xfail)" if row["known_defect_cases"] else ""
        exits = ", ".join(f"exit {code}: {k}" for code, k in row["exit_codes"].items())
        terminalreporter.write_line(
            f"{family:<10} {row['cases']:>4} cases in {row['seconds']:>5.1f} s ({exits}){known}"
        )
    total = sum(cases.values())
    seconds = sum(_TALLY["seconds"].values())
    terminalreporter.write_line(
        f"{'total':<10} {total:>4} cases in {seconds:>5.1f} s"
        + (f" ({base / 'fuzz_cases.json'})" if base is not None else "")
    )
