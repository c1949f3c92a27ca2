"""Benchmark: expkit doctor's recall and false alarms on programs written from outside reports (dev and held-out
halves, tests/doctor/outside), on its own bug suite, and the step-time overhead of its checks vs the same loop
bare, measured in one run.

    .venv/bin/python benchmarks/bench_doctor.py [--steps 40] [--repeats 5] [--workers 2] [--skip-suite]
        [--own-suite] [--split dev|held_out|all] [--batch batch1|...|batch19|all] [--run-on] [--quick] [--out DIR]
        [--check]

Outside programs (issue 32), nineteen batches each split on its own (batch1: seed 32; batch2: seed 3202, with DDP on
gloo, peft, HF Trainer and Lightning programs; batch3: seed 3303, from reports the first two did not use;
batch4: seed 3404, batch5: seed 3505, batch6: seed 3606, batch7: seed 3707, batch8: seed 3808, batch9: seed
3909, batch10: seed 4010, batch11: seed 4111, batch12: seed 4112, batch13: seed 4113, batch14: seed 4114,
batch15: seed 4115, batch16: seed 4116, batch17: seed 4117, batch18: seed 4118 and batch19: seed 4119, each written
by helpers that never read the checks):
development programs are printed one by one, held-out programs only as totals (nobody tunes on their names). A bug
is found when any bug-kind finding comes within the first two optimizer steps, at its line when a finding names the
program's ``# BUG-LINE`` (within one line); a clean program alarms on any bug-kind finding. The goals are the
issue's, judged on each batch's held-out third: recall >= 0.90, at most one clean program with a finding, >= 80 % of
the found bugs named at their own line, and the steps after the watch at most 1.05x the bare loop's. Regression
gates that were tests (moved here for the suite's time): each development half, recall >= 0.75 and at most one clean
program with a finding; the own suite (``--own-suite``), every program ran, at most one bug in 20 missed, at most
one clean program in 15 with a finding. ``--check`` exits 1 on a miss (``benchmarks/timing.py``).

Recall: a bug program counts as caught when the check it declares (``doctor-expect:``) fires within the first
two optimizer steps (each program a real child process under ``expkit doctor``, stopped after the watch; ``--workers``
programs at a time, a DDP program under its own ``torchrun``).
Overhead: one loop (a small causal transformer on CPU, one thread), timed per step three ways in
interleaved repeats: bare, while watched (every check running), and after the watch (the watch's hooks removed;
the two after-watch hooks of a program that runs on under ``expkit doctor`` stay on).
``--run-on``: every program runs a second time to its end, as a user runs it (a model left in ``eval()`` by a
later validation, an optimizer rebuilt per epoch, a second phase's optimizer are watched then): the bugs found and
the clean programs with a finding are counted again (held out: at most one clean, a goal; the bugs found so are
reported beside the within-2-steps recall, not in it).
``--quick`` (for CI): 1 bug + 1 clean development program of the first and the newest batch (of the one batch
``--batch`` names), 6 steps, one repeat; its figures are not comparisons.
Writes benchmarks/results/doctor.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from expkit.doctor import watch
from expkit.doctor.outside import BATCHES, load_manifest, run_outside, score_split
from expkit.doctor.suite import ProgramOutcome, iter_suite, run_program, score_outcomes
from timing import Goal, add_run_options, finish  # benchmarks/timing.py

SUITE = Path(__file__).resolve().parent.parent / "tests" / "doctor" / "suite"
OUTSIDE = Path(__file__).resolve().parent.parent / "tests" / "doctor" / "outside"
V, T, D = 64, 64, 128


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(V, D)
        layer = nn.TransformerEncoderLayer(D, 4, 4 * D, dropout=0.1, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(D, V)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(idx.shape[1])
        return self.head(self.blocks(self.tok(idx), mask=mask, is_causal=True))  # (B, T, V)


def step_times(steps: int, watched_steps: int | None) -> list[float]:
    """Seconds per optimizer step of the loop; with ``watched_steps``, the first that many run under watch()."""
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, V, (steps, 16, T + 1))
    w = watch(model, opt, steps=watched_steps) if watched_steps else None
    if w is not None:  # as under `expkit doctor` without --steps: the after-watch hooks stay on the later steps
        w.probe.after_watch = True
    times = []
    for i in range(steps):
        t0 = time.perf_counter()
        x, y = data[i, :, :-1], data[i, :, 1:]
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    if w is not None:
        assert w.done and not w.check_errors, w.check_errors
        assert w.probe.after is not None  # the later steps were timed with the after-watch hooks on
        w.probe.after.uninstall()
        assert not w.findings, [f.check for f in w.findings]  # a clean loop: a finding here is a false alarm
    return times


def measure_overhead(steps: int, repeats: int, watched: int) -> dict[str, float]:
    """Median step time bare, during the watched steps and after them, from interleaved repeats: the watched
    steps are compared with the bare loop's same first steps (both carry the warm-up), the steps after the
    watch with the bare loop's later steps."""
    bare_first, bare_rest, during, after = [], [], [], []
    for _ in range(repeats):
        b = step_times(steps, None)
        d = step_times(steps, watched)
        bare_first += b[:watched]
        bare_rest += b[watched:]
        during += d[:watched]
        after += d[watched:]
    m_first, m_bare = statistics.median(bare_first), statistics.median(bare_rest)
    m_during, m_after = statistics.median(during), statistics.median(after)
    return {
        "bare_first_steps_s": m_first,
        "bare_step_s": m_bare,
        "watched_step_s": m_during,
        "after_watch_step_s": m_after,
        "watched_over_bare": m_during / m_first,
        "after_watch_over_bare": m_after / m_bare,
    }


def _run_and_show(path: Path) -> ProgramOutcome:
    o = run_program(path)
    print(f"  {o.program}: expected {o.expected}, found {list(o.checks_found)} ({o.elapsed_s:.1f} s)", flush=True)
    return o


def measure_suite(quick: bool, workers: int) -> dict:
    programs = list(iter_suite(SUITE))
    if quick:
        programs = [p for p in programs if p.parent.name == "bugs"][:2] + [
            p for p in programs if p.parent.name == "clean"
        ][:2]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(_run_and_show, programs))
    score = score_outcomes(outcomes)
    return {
        "bug_programs": score.bugs,
        "caught_within_2_steps": score.caught,
        "recall": score.recall,
        "clean_programs": score.clean,
        "clean_with_findings": score.clean_with_findings,
        "did_not_run": score.did_not_run,
        "workers": workers,
        "suite_wall_s": time.perf_counter() - t0,
        "programs": [
            {"program": o.program, "expected": o.expected, "found": list(o.checks_found), "elapsed_s": o.elapsed_s}
            for o in score.outcomes
        ],
    }


def _score_half(outcomes: list, half: str) -> dict:
    sc = score_split(outcomes, half)
    score = {
        "bug_programs": sc.bugs,
        "found_within_2_steps": sc.found,
        "recall": sc.recall,
        "found_at_bug_line": sc.found_at_line,
        "at_line_share": sc.at_line_share,
        "clean_programs": sc.clean,
        "clean_with_findings": sc.clean_with_findings,
        "did_not_step": sc.did_not_step,
    }
    if half == "dev":  # held-out programs are reported as totals only: no one tunes on their names
        score |= {"missed": list(sc.missed), "alarms": list(sc.alarms)}
    return score


def measure_outside(quick: bool, workers: int, split: str, batches: tuple[str, ...], run_on: bool = False) -> dict:
    """Run the outside programs of ``split`` (``all``: both halves) of each batch through doctor and score each
    half. Development programs are listed one by one; held-out programs only as totals. ``run_on``: every program
    is run a second time to its end (what doctor watches after the watch is on) and counted again."""
    result: dict = {"workers": workers}
    for batch in batches:
        entries = [e for e in load_manifest(OUTSIDE / "manifest.json", batch) if split in ("all", e["split"])]
        if quick:  # development programs only: a quick run must not show a held-out program's outcome by name
            dev = [e for e in entries if e["split"] == "dev"]
            entries = [e for e in dev if e["kind"] == "bug"][:1] + [e for e in dev if e["kind"] == "clean"][:1]
        t0 = time.perf_counter()
        outcomes = run_outside(OUTSIDE, entries, workers=workers)
        out: dict = {"wall_s": time.perf_counter() - t0}
        for half in ("dev", "held_out"):
            sc = out[half] = _score_half(outcomes, half)
            print(
                f"outside {batch} {half}: found {sc['found_within_2_steps']}/{sc['bug_programs']} bugs within 2 steps "
                f"({sc['recall']:.0%}), {sc['found_at_bug_line']} of them at the bug's line "
                f"({sc['at_line_share']:.0%}); "
                f"{sc['clean_with_findings']}/{sc['clean_programs']} clean programs with a finding; "
                f"{sc['did_not_step']} did not step"
            )
            for name in sc.get("missed", []):
                print(f"  missed {name}")
            for alarm in sc.get("alarms", []):
                print(f"  false alarm {alarm}")
        if run_on:
            late = run_outside(OUTSIDE, entries, workers=workers, run_on=True)
            for half in ("dev", "held_out"):
                sc = score_split(late, half)
                out[half]["clean_with_findings_run_on"] = sc.clean_with_findings
                out[half]["found_run_on"] = sc.found
                out[half]["found_at_bug_line_run_on"] = sc.found_at_line
                print(
                    f"outside {batch} {half}: run to their end, found {sc.found}/{sc.bugs} bugs "
                    f"({sc.found_at_line} at the bug's line), {sc.clean_with_findings}/{sc.clean} clean programs "
                    "with a finding"
                )
                if half == "dev":
                    for alarm in sc.alarms:
                        print(f"  false alarm (run on) {alarm}")
        out["programs"] = [
            {
                "program": o.program,
                "split": o.split,
                "kind": o.kind,
                "checks": list(o.checks),
                "lines": list(o.lines),
                "bug_line": o.bug_line,
                "steps_watched": o.steps_watched,
                "elapsed_s": o.elapsed_s,
            }
            if o.split == "dev"
            else {"program": o.program, "split": o.split, "kind": o.kind}
            for o in outcomes
        ]
        result[batch] = out
    return result


def _goals(results: dict) -> list[Goal]:
    goals = [Goal("steps after the watch / bare", results["overhead"]["after_watch_over_bare"], 1.05, "<=")]
    suite = results.get("suite")
    if suite and suite["bug_programs"]:  # the own suite's targets (were tests/doctor/test_suite.py's)
        goals += [
            Goal("own suite: programs that did not run", suite["did_not_run"], 0, "<="),
            Goal(
                "own suite: bugs caught within 2 steps",
                suite["caught_within_2_steps"],
                suite["bug_programs"] - max(1, suite["bug_programs"] // 20),
                ">=",
            ),
            Goal(
                "own suite: clean programs with a finding",
                suite["clean_with_findings"],
                max(1, suite["clean_programs"] // 15),
                "<=",
            ),
        ]
    for batch in BATCHES:
        dev = results.get("outside", {}).get(batch, {}).get("dev")
        if dev and dev["bug_programs"]:  # a regression gate on the half the checks were built on
            goals += [
                Goal(f"{batch} dev recall within 2 steps", dev["recall"], 0.75, ">="),
                Goal(f"{batch} dev clean programs with a finding", dev["clean_with_findings"], 1, "<="),
            ]
        held = results.get("outside", {}).get(batch, {}).get("held_out")
        if held and held["bug_programs"]:
            goals += [
                Goal(f"{batch} held-out recall within 2 steps", held["recall"], 0.90, ">="),
                Goal(f"{batch} held-out clean programs with a finding", held["clean_with_findings"], 1, "<="),
                Goal(f"{batch} held-out found bugs named at their line", held["at_line_share"], 0.80, ">="),
            ]
            if "clean_with_findings_run_on" in held:
                goals.append(
                    Goal(
                        f"{batch} held-out clean programs with a finding, run to their end",
                        held["clean_with_findings_run_on"],
                        1,
                        "<=",
                    )
                )
    return goals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="steps per timed loop (default 40)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats (default 5)")
    parser.add_argument("--workers", type=int, default=2, help="suite programs run at a time (default 2)")
    parser.add_argument("--skip-suite", action="store_true", help="only the overhead")
    parser.add_argument("--own-suite", action="store_true", help="also run doctor's own suite (tests/doctor/suite)")
    parser.add_argument("--split", choices=("dev", "held_out", "all"), default="all", help="outside half to run")
    parser.add_argument("--batch", choices=(*BATCHES, "all"), default="all", help="outside batch to run")
    parser.add_argument(
        "--run-on",
        action="store_true",
        help="also run each clean outside program to its end (after-watch hooks, second watch) and count its findings",
    )
    add_run_options(parser)
    args = parser.parse_args()
    steps, repeats = (6, 1) if args.quick else (args.steps, args.repeats)
    torch.set_num_threads(1)  # the machine is shared: one thread times steadier
    results: dict = {"threads": torch.get_num_threads(), "load_avg_1m": os.getloadavg()[0]}
    results["overhead"] = measure_overhead(steps, repeats, watched=2)
    o = results["overhead"]
    print(
        f"step time: bare {o['bare_first_steps_s'] * 1e3:.1f} ms (first 2) / {o['bare_step_s'] * 1e3:.1f} ms (later), "
        f"watched {o['watched_step_s'] * 1e3:.1f} ms "
        f"({o['watched_over_bare']:.2f}x), after the watch {o['after_watch_step_s'] * 1e3:.1f} ms "
        f"({o['after_watch_over_bare']:.3f}x)"
    )
    if not args.skip_suite:
        batches = BATCHES if args.batch == "all" else (args.batch,)
        if args.quick and args.batch == "all":
            batches = (BATCHES[0], BATCHES[-1])  # quick: does it run; the first batch and the newest
        results["outside"] = measure_outside(args.quick, args.workers, args.split, batches, args.run_on)
    if not args.skip_suite and args.own_suite:
        s = results["suite"] = measure_suite(args.quick, args.workers)
        print(
            f"suite: caught {s['caught_within_2_steps']}/{s['bug_programs']} bugs within 2 steps; "
            f"{s['clean_with_findings']}/{s['clean_programs']} clean programs with a finding; "
            f"{s['did_not_run']} did not run ({s['suite_wall_s']:.0f} s with {s['workers']} workers)"
        )
    return finish(results, _goals(results), args, "doctor")


if __name__ == "__main__":
    raise SystemExit(main())
