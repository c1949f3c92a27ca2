"""Score one half of the outside cases with the test's own judge and print each case's verdict and the totals
(exact turns / checked turns, template refusals, tool-dropping templates, tracebacks).

    .venv/bin/python tests/finetune/families/score_outside.py first dev
    .venv/bin/python tests/finetune/families/score_outside.py second held_out
"""

from __future__ import annotations

import re
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from families.outside import split
from test_outside_templates import judge


def main(round_name: str, half: str) -> int:
    cases = split(second=round_name == "second")[half]
    passed = exact = turns = crashed = refused = 0
    dropping: set[str] = set()
    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                ok, why = judge(case, Path(tmp))
            except Exception:  # noqa: BLE001 - a traceback is a finding: counted and printed
                crashed += 1
                print(f"TRACEBACK {case}\n{traceback.format_exc()}")
                continue
        passed += ok
        m = re.search(r"exact on (\d+)/(\d+)", why)
        if m:
            exact, turns = exact + int(m[1]), turns + int(m[2])
        refused += why.startswith("refused")
        if "tool_calls" in why:
            dropping.add(case.split("/")[0])
        print(f"{'PASS' if ok else 'FAIL'} {case}: {why}")
    print(
        f"{round_name} {half}: {passed}/{len(cases)} cases pass; exact turns {exact}/{turns}; "
        f"refused with exit 2 {refused}; tracebacks {crashed}; tool-dropping templates {sorted(dropping)}"
    )
    return 0 if passed == len(cases) and not crashed else 1


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
