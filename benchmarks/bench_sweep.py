"""Benchmark expkit sweep against its peers, side by side in one run (issue 16):

- local backend vs the same 8 commands run one after another (serial): target >= 1.7x on 2 cores;
- Ray backend vs a plain ``ray.remote`` loop running the same commands on the same local instance
  (``num_cpus=2``, started once, workers warmed for both): target within 15%;
- per-trial overhead of expkit (the seven records, the store, the output pump): ``runs.execute`` of a
  command vs ``subprocess.run`` of it, median of repeats: target <= 0.3 s; measured in a directory outside
  git and in this checkout (where the code record diffs the working tree).

Each trial is CPU-bound for a fixed amount of *CPU* time (2 s; 0.2 s with --quick), so the work per
trial does not depend on how busy the machine is; the wall time does. The machine is shared: the load
average is recorded beside the figures, and ratios are medians of repeats, not guarantees.
Usage: .venv/bin/python benchmarks/bench_sweep.py [--quick] [--out DIR]   (writes sweep.json)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import add_run_options, median_wall_s, write_results  # benchmarks/timing.py

N_TRIALS = 8
BUSY = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}:\n    pass\n"
REPO = Path(__file__).resolve().parents[1]


def _commands(cpu_s: float) -> list[list[str]]:
    return [[sys.executable, "-c", BUSY.format(s=cpu_s)] for _ in range(N_TRIALS)]


def _serial_s(cpu_s: float) -> float:
    t0 = time.perf_counter()
    for cmd in _commands(cpu_s):
        subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def _sweep_s(store: Path, cpu_s: float, backend: str, tag: str) -> float:
    from expkit.sweep import BackendSettings, SweepRequest, plan_sweep, run_sweep

    plan = plan_sweep(_commands(cpu_s)[0], group=f"{backend}-{tag}", seeds=N_TRIALS, config_args=False)
    t0 = time.perf_counter()
    res = run_sweep(SweepRequest(plan, store=store, backend=backend, settings=BackendSettings(max_parallel=2)))
    elapsed = time.perf_counter() - t0
    assert res.counts == {"finished": N_TRIALS}, res.counts
    return elapsed


def _plain_ray_s(cpu_s: float) -> float:
    import ray

    @ray.remote(num_cpus=1)
    def run(cmd: list[str]) -> int:
        return subprocess.run(cmd, check=True).returncode

    t0 = time.perf_counter()
    ray.get([run.remote(cmd) for cmd in _commands(cpu_s)])
    return time.perf_counter() - t0


def _overhead_s(store: Path, cwd: Path, repeats: int) -> dict:
    """Median of expkit's execute minus the median of subprocess.run, for a command that does nothing."""
    from expkit.runs.execute import ExecRequest, execute

    cmd = [sys.executable, "-c", "pass"]
    old = Path.cwd()
    os.chdir(cwd)
    try:
        execute(ExecRequest(cmd, store=store))  # first call: imports, index creation; not counted
        ours = median_wall_s(lambda: execute(ExecRequest(cmd, store=store)), repeats)
        plain = median_wall_s(lambda: subprocess.run(cmd, check=True), repeats)
    finally:
        os.chdir(old)
    return {"execute_s": ours, "subprocess_s": plain, "overhead_s": ours - plain}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(parser)
    args = parser.parse_args()
    cpu_s = 0.2 if args.quick else 2.0
    repeats = 1 if args.quick else 3
    load_before = os.getloadavg()
    results: dict = {"trials": N_TRIALS, "trial_cpu_s": cpu_s, "cores": os.cpu_count(), "repeats": repeats}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.chdir(tmp)  # trials record the code of where they start: outside git here (see overhead below)
        store = tmp / "store"
        serial, local = [], []
        for i in range(repeats):  # alternate, so drift in the machine's load hits both sides
            serial.append(_serial_s(cpu_s))
            local.append(_sweep_s(store, cpu_s, "local", str(i)))
        results["local"] = {
            "serial_s": statistics.median(serial),
            "sweep_s": statistics.median(local),
            "serial_all_s": serial,
            "sweep_all_s": local,
        }
        results["local"]["speedup"] = results["local"]["serial_s"] / results["local"]["sweep_s"]
        # cores kept busy: the trials' CPU seconds over the wall time (2.0 is the whole machine)
        results["local"]["cores_used_serial"] = N_TRIALS * cpu_s / results["local"]["serial_s"]
        results["local"]["cores_used_sweep"] = N_TRIALS * cpu_s / results["local"]["sweep_s"]

        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            _plain_ray_s(0.01)  # start both workers before either side is timed
            plain, ours = [], []
            for i in range(repeats):  # alternate, so drift in the machine's load hits both sides
                plain.append(_plain_ray_s(cpu_s))
                ours.append(_sweep_s(store, cpu_s, "ray", str(i)))
        finally:
            ray.shutdown()
        results["ray"] = {
            "plain_ray_s": statistics.median(plain),
            "sweep_s": statistics.median(ours),
            "plain_ray_all_s": plain,
            "sweep_all_s": ours,
        }
        results["ray"]["ratio"] = results["ray"]["sweep_s"] / results["ray"]["plain_ray_s"]

        n = 3 if args.quick else 10
        results["overhead_outside_git"] = _overhead_s(store, tmp, n)
        results["overhead_in_checkout"] = _overhead_s(store, REPO, n)
        os.chdir(REPO)
    results["loadavg_before"] = load_before
    results["loadavg_after"] = os.getloadavg()

    loc, ray_r = results["local"], results["ray"]
    print(
        f"{N_TRIALS} trials of {cpu_s} CPU-s on {os.cpu_count()} cores (load {load_before[0]:.1f} -> "
        f"{results['loadavg_after'][0]:.1f}), median of {repeats}:"
    )
    print(
        f"  local backend {loc['sweep_s']:.2f} s vs serial {loc['serial_s']:.2f} s: {loc['speedup']:.2f}x "
        f"(target >= 1.7x); cores kept busy {loc['cores_used_sweep']:.2f} vs {loc['cores_used_serial']:.2f}"
    )
    print(
        f"  ray backend   {ray_r['sweep_s']:.2f} s vs plain ray.remote loop {ray_r['plain_ray_s']:.2f} s: "
        f"{ray_r['ratio']:.2f}x (target <= 1.15x)"
    )
    for where in ("overhead_outside_git", "overhead_in_checkout"):
        o = results[where]
        print(
            f"  per-trial overhead, {where.split('_', 1)[1].replace('_', ' ')}: {o['overhead_s']:.3f} s "
            f"(execute {o['execute_s']:.3f} s - subprocess {o['subprocess_s']:.3f} s; target <= 0.3 s)"
        )
    write_results(results, args.out, "sweep", quick=args.quick)


if __name__ == "__main__":
    main()
