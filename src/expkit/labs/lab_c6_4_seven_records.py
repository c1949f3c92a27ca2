"""Lab C6.4: a run records all seven records by default; a run is restored from its records alone (commit +
patch in a fresh git worktree, data fingerprint, seed) after its project moved on, rerun and compared; and
``diff`` names a changed config value, a changed package version and an uncommitted code change between two runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

if TYPE_CHECKING:
    from pathlib import Path

    from expkit.runs.execute import ExecResult
    from expkit.runs.repro import ReproReport

SEED_SEVEN = SeedFigure(
    "seven_records",
    "records a run keeps by default",
    7,
    "records",
    "code version, data version, config, environment, seed, hardware, logs and checkpoints",
)
SEED_REPRO = SeedFigure(
    "repro_exact",
    "a run can be reproduced three months later",
    None,
    "",
    "seven records make a run reproducible three months later",
)
SEED_DIFF = SeedFigure(
    "diff_explains",
    "a changed run can be explained from the records",
    None,
    "",
    "seven records make a run explainable: code, data, config, environment, seed, hardware, logs",
)
REPRO = Shown(
    "a run rebuilt from its records alone (commit + uncommitted patch in a fresh worktree, recorded seed) "
    "after the project moved on reruns to bitwise-equal final metrics, and a changed data file is named"
)
DIFF = Shown("diff names the changed config value, package version and uncommitted code patch")

# a training script with no expkit in it: the seed comes from EXPKIT_SEED, metrics are JSON lines on stdout
_REPRO_SCRIPT = """import json, os, random

random.seed(int(os.environ["EXPKIT_SEED"]))
xs = [float(line.split()[0]) for line in open("data.txt")]
w, lr = random.gauss(0, 1), {lr}
for step in range(30):
    x = random.choice(xs)
    w -= lr * 2 * (w * x - 3 * x) * x
    print(json.dumps({{"step": step, "loss": (w * x - 3 * x) ** 2, "w": w}}))
"""


def _reproduce_after_three_months(root: Path, seed: int) -> tuple[ExecResult, ReproReport, ReproReport]:
    """A project with a committed script and an uncommitted edit; run it with ``runs exec``, move the project on
    (new commit, script deleted), then ``runs repro`` it; then change the data file and repro again.
    Returns (original ExecResult, first ReproReport, ReproReport after the data change)."""
    from expkit.runs.execute import ExecRequest, execute
    from expkit.runs.repro import reproduce

    repo, store = root / "repro-project", root / "repro-project" / "runs"
    repo.mkdir()
    (repo / "train.py").write_text(_REPRO_SCRIPT.format(lr=0.01))
    (repo / "data.txt").write_text("".join(f"{0.1 * (i % 10) + 0.1:.1f} x\n" for i in range(40)))
    (repo / ".gitignore").write_text("runs/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "project")
    (repo / "train.py").write_text(_REPRO_SCRIPT.format(lr=0.02))  # uncommitted: only the patch record has it
    quiet = lambda stream, line: None  # noqa: E731 - the lab does not echo the script's output
    orig = execute(
        ExecRequest(
            ("python", "train.py"), store=store, name="original", seed=seed, cwd=repo, data=(str(repo / "data.txt"),)
        ),
        on_output=quiet,
    )
    # three months later: the project moved on; the script as it ran no longer exists in the tree
    (repo / "train.py").unlink()
    (repo / "NOTES.md").write_text("rewrote everything\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "moved on")
    rep = reproduce(orig.run_id, store=store, on_output=quiet)
    (repo / "data.txt").write_text("0.5 x\n" * 40)  # the data changed under the run
    rep_changed = reproduce(orig.run_id, store=store, on_output=quiet)
    return orig, rep, rep_changed


_TRAIN = "lr = {lr}\n# the training script of the lab's project\n"


def _git(cwd, *args: str) -> None:
    import subprocess

    subprocess.run(
        ["git", "-c", "user.email=lab@expkit", "-c", "user.name=lab", *args], cwd=cwd, check=True, capture_output=True
    )


def _fake_dist(site, version: str) -> None:
    """A real installed distribution as importlib.metadata sees it (a dist-info directory on sys.path), replaced
    the way pip upgrades one: the old ``name-version.dist-info`` directory removed, the new one created."""
    import shutil

    site.mkdir(parents=True, exist_ok=True)
    for old in site.glob("expkit_lab_probe-*.dist-info"):
        shutil.rmtree(old)
    dist = site / f"expkit_lab_probe-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: expkit-lab-probe\nVersion: {version}\n")


def _train(run, *, lr: float, steps: int, seed: int) -> None:
    """A tiny regression trained with torch so the run has metrics and a checkpoint."""
    import torch

    g = torch.Generator().manual_seed(1234)  # fixed data; the run's seed drives the init
    x = torch.randn(64, 4, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 3.0, 0.5])
    torch.manual_seed(seed)
    net = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    for step in range(steps):
        loss = ((net(x).squeeze(-1) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.log(step, loss=loss)
    run.save_checkpoint({"model": net.state_dict(), "optimizer": opt.state_dict(), "step": steps}, "last")


_MLFLOW_SCRIPT = """
import sys
import mlflow

# a user's script with MLflow's defaults: start a run, log the loss; nothing else
mlflow.set_tracking_uri(sys.argv[1])
with mlflow.start_run() as run:
    for step in range(5):
        mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
print(run.info.run_id)
"""


def _mlflow_default_records(repo, uri: str) -> dict[str, bool] | str:
    """Run a script with MLflow's defaults in ``repo`` and read back which of the seven it kept."""
    import subprocess
    import sys

    try:
        from mlflow import MlflowClient
    except ImportError:
        return "mlflow is not installed"
    res = subprocess.run(
        [sys.executable, "mlflow_train.py", uri], cwd=repo, capture_output=True, text=True, timeout=300
    )
    if res.returncode != 0:
        return f"the MLflow script failed: {res.stderr.strip().splitlines()[-1:]}"
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(res.stdout.strip().splitlines()[-1])
    tags, params = run.data.tags, run.data.params
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id)]
    return {
        "code": "mlflow.source.git.commit" in tags,
        "uncommitted patch": any("patch" in k or "diff" in k for k in tags) or any("patch" in a for a in artifacts),
        "data": run.inputs is not None and bool(run.inputs.dataset_inputs),
        "config": bool(params),
        "environment": any(a.endswith(("requirements.txt", "conda.yaml")) for a in artifacts),
        "seed": any("seed" in k.lower() for k in [*tags, *params]),
        "hardware": any(k.startswith("system/") for k in run.data.metrics),
        "logs": bool(client.get_metric_history(run.info.run_id, "loss")),
        "checkpoints": bool(artifacts),
    }


@lab(id="C6.4", title="The seven records and diff", claims=("C6.4",), seed=(SEED_SEVEN, SEED_DIFF))
def run(ctx: LabContext) -> LabOutput:
    import sys
    import tempfile
    import time
    from pathlib import Path

    from expkit.runs import Capture, start
    from expkit.runs.diff import diff_runs
    from expkit.runs.records import describe_records
    from expkit.runs.store import read_run

    steps = 20
    with tempfile.TemporaryDirectory(prefix="expkit-c6-4-") as tmp:
        root = Path(tmp)
        repo, store, site = root / "project", root / "project" / "runs", root / "site"
        repo.mkdir()
        (repo / "train.py").write_text(_TRAIN.format(lr=0.1))
        (repo / "data.txt").write_text("1 2 3 4\n" * 500)
        (repo / ".gitignore").write_text("runs/\nmlflow.db\nmlruns/\n")
        if not ctx.quick:
            (repo / "mlflow_train.py").write_text(_MLFLOW_SCRIPT)
        _git(repo, "init", "-q")
        _git(repo, "add", ".")
        _git(repo, "commit", "-qm", "lab project")
        _fake_dist(site, "1.0")
        sys.path.insert(0, str(site))
        try:
            t0 = time.perf_counter()
            with start(
                config={"lr": 0.1, "steps": steps, "batch_size": 64},
                data=[repo / "data.txt"],
                seed=ctx.seed,
                store=store,
                name="before",
                capture=Capture(code_dir=repo),
            ) as run_a:
                start_s = time.perf_counter() - t0
                _train(run_a, lr=0.1, steps=steps, seed=ctx.seed)
            # three changes: a config value, a package version, an uncommitted edit
            _fake_dist(site, "1.1")
            (repo / "train.py").write_text(_TRAIN.format(lr=0.2) + "# tuned after the run\n")
            with start(
                config={"lr": 0.2, "steps": steps, "batch_size": 64},
                data=[repo / "data.txt"],
                seed=ctx.seed,
                store=store,
                name="after",
                capture=Capture(code_dir=repo),
            ) as run_b:
                _train(run_b, lr=0.2, steps=steps, seed=ctx.seed)
        finally:
            sys.path.remove(str(site))
        mlflow_kept = None if ctx.quick else _mlflow_default_records(repo, f"sqlite:///{root / 'mlflow.db'}")
        orig, rep, rep_changed = _reproduce_after_three_months(root, ctx.seed)
        rec_a = read_run(run_a.dir)
        present = describe_records(rec_a, run_a.dir)
        d = diff_runs("before", "after", store=store)

    n_present = sum(p.present for p in present)
    keys = [(x.category, x.key) for x in d.differences]

    def rank(category: str, key: str) -> int | None:
        return keys.index((category, key)) + 1 if (category, key) in keys else None

    r_cfg = rank("config", "lr")
    r_pkg = rank("package", "expkit-lab-probe")
    r_code = rank("code", "uncommitted patch (sha256)")
    caught = all(r is not None for r in (r_cfg, r_pkg, r_code))
    loss = next((m for m in d.metrics if m.name == "loss"), None)
    restored = (
        orig.status == "finished"
        and rep.verdict == "exact"
        and not rep.data_mismatches
        and rep.patch_applied
        and bool(rep_changed.data_mismatches)
    )
    measurements = [
        judged(
            "seven_records",
            f"expkit's own start() kept its seven records by default: {n_present} of 7",
            n_present == 7,
            "",
            rule=Shown(
                "expkit.runs.start() keeps all seven records without extra code",
                source="a check of this tool's own behaviour, not evidence for the seed's figure: the seven are the "
                "seed's list, which start() was written to capture; what they buy is judged by the restored run below",
            ),
            seed=SEED_SEVEN,
            detail="; ".join(f"{p.record}: {'ok' if p.present else 'MISSING'}" for p in present),
        ),
        judged(
            "repro_exact",
            "run restored from its records in a fresh worktree, rerun: bitwise-equal metrics",
            restored,
            "",
            rule=REPRO,
            seed=SEED_REPRO,
            detail=f"original {orig.run_id} ({orig.status}); repro verdict {rep.verdict} ({rep.note}); patch "
            f"applied {rep.patch_applied}; final metrics then/now "
            + ", ".join(f"{k} {a!r}/{b!r}" for k, (a, b) in rep.metrics.items())
            + f"; after changing data.txt: {rep_changed.verdict}, data changed: "
            + ("; ".join(rep_changed.data_mismatches) or "none named"),
        ),
        *(
            Measurement(f"record_{p.record}", f"{p.record} record", p.summary if p.present else "missing", "")
            for p in present
        ),
        Measurement(
            "capture_s",
            "start(): capture the seven records and seed",
            rec_a["capture_s"],
            "s",
            detail=f"start() returned after {start_s:.3f} s (the issue's bound: 0.5 s)",
        ),
        judged(
            "diff_catches_three",
            "diff names the config value, the package version and the code patch",
            caught,
            "",
            rule=DIFF,
            seed=SEED_DIFF,
            detail=f"ranks: config lr #{r_cfg}, package #{r_pkg}, uncommitted patch #{r_code} of {len(keys)} "
            "differences",
        ),
        Measurement(
            "loss_delta",
            "final loss after - before",
            loss.delta if loss else None,
            "",
            detail=f"{loss.a:.4g} -> {loss.b:.4g}" if loss and loss.a is not None else "",
        ),
    ]
    if isinstance(mlflow_kept, dict):
        kept = [k for k, v in mlflow_kept.items() if v]
        measurements.append(
            Measurement(
                "mlflow_default_records",
                "of the same checks, what an MLflow run with default settings kept",
                f"{len(kept)} of {len(mlflow_kept)}",
                "",
                detail="; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in mlflow_kept.items()),
            )
        )
    elif mlflow_kept is not None:
        measurements.append(
            Measurement("mlflow_default_records", "what an MLflow run with defaults kept", None, "", detail=mlflow_kept)
        )
    explanation = (
        f"Reproducible later, tested: a script run with `expkit runs exec` from a git project with an uncommitted "
        f"edit, then the project moved on (the script deleted, a new commit). `expkit runs repro` rebuilt the code "
        f"from the records alone (commit + patch in a fresh worktree), checked the data fingerprint, reran with the "
        f"recorded seed: {rep.verdict} ({rep.note}). With the data file changed afterwards, repro named it "
        f"({'; '.join(rep_changed.data_mismatches) or 'not named'}) and the rerun, which reads the committed copy "
        f"in its worktree, was {rep_changed.verdict}.\n\n"
        f"A run started with expkit.runs.start() in a small git project recorded {n_present} of the seven "
        "records without extra code: the commit plus a patch of uncommitted work, a content hash of the data "
        "file, config.json, every installed package with its version (importlib.metadata), the root seed that "
        "seeded python, numpy and torch, the CPU/RAM/GPU, and metrics.jsonl plus a safetensors checkpoint. "
        f"Capturing them took {rec_a['capture_s']:.2f} s. That count checks this tool against the seed's list, "
        "which start() was written to capture, so it is shown as demonstrated, not as a reproduced figure; what "
        "the records buy is the restored run above.\n\n"
        "Between two runs the lab changed three things a tracker usually misses: a config value, an installed "
        "package's version (a real dist-info on sys.path) and an uncommitted edit. `expkit runs diff` listed "
        f"{len(keys)} differences: the config value #{r_cfg}, the package version #{r_pkg} and the "
        f"patch #{r_code}"
        + (": config first, the order in which they most often explain a metric change." if r_cfg == 1 else ".")
    )
    if isinstance(mlflow_kept, dict):
        explanation += (
            f"\n\nThe same project's script run with MLflow's defaults (start_run + log_metric, SQLite store) kept "
            f"{', '.join(k for k, v in mlflow_kept.items() if v) or 'nothing'} and no "
            f"{', '.join(k for k, v in mlflow_kept.items() if not v)}."
        )
    elif ctx.quick:
        explanation += "\n\n(The full budget also runs a script with MLflow's defaults and lists what it kept.)"
    return LabOutput(measurements=tuple(measurements), explanation=explanation)
