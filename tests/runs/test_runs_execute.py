"""`runs exec` as a library call, the determinism probe, diff ranking and repro."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from expkit.errors import UsageError
from expkit.runs import start
from expkit.runs.determinism import probe_command, probe_function, read_noise_floor
from expkit.runs.diff import diff_runs
from expkit.runs.execute import ExecRequest, execute, parse_metrics_line
from expkit.runs.repro import reproduce
from expkit.runs.store import read_run

PY = sys.executable
# A "training" script without torch (fast to start): noise from EXPKIT_SEED, lr from argv.
TRAIN = textwrap.dedent("""
    import json, os, random, sys
    rng = random.Random(int(os.environ["EXPKIT_SEED"]))
    lr = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1
    loss = 2.0
    for step in range(20):
        loss = loss * (1 - lr) + rng.gauss(0, 0.05)
        print(json.dumps({"step": step, "loss": loss, "note": "x"}))
    print("done", file=sys.stderr)
""")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    (repo / ".gitignore").write_text("runs/\n")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    monkeypatch.chdir(repo)
    monkeypatch.delenv("EXPKIT_SEED", raising=False)
    return repo


def test_parse_metrics_line() -> None:
    assert parse_metrics_line(b'{"step": 3, "loss": 0.5, "tag": "a", "ok": true}\n') == (
        {"step": 3, "loss": 0.5},
        None,
        "json",
    )
    assert parse_metrics_line(b'{"loss": 0.5}') is None
    assert parse_metrics_line(b'{"step": "3"}') is None
    assert parse_metrics_line(b"step 3 loss 0.5") is None


def test_exec_records_output_metrics_and_status(repo: Path) -> None:
    seen: list[tuple[str, bytes]] = []
    res = execute(
        ExecRequest([PY, "train.py", "0.1"], store=repo / "runs", seed=4, name="base", data=["train.py"]),
        on_output=lambda s, line: seen.append((s, line)),
    )
    rec = read_run(Path(res.run_dir))
    assert res.status == "finished" and res.exit_code == 0 and rec["seed"]["seed"] == 4
    assert rec["command"] == [PY, "train.py", "0.1"] and rec["code"]["dirty"] is False
    lines = (Path(res.run_dir) / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 20 and "note" not in json.loads(lines[0])
    assert "done" in (Path(res.run_dir) / "output.log").read_text()
    assert ("stderr", b"done\n") in seen and res.final_metrics["step"] == 19
    failed = execute(
        ExecRequest([PY, "-c", "import sys; print('bad', file=sys.stderr); sys.exit(3)"], store=repo / "runs")
    )
    rec = read_run(Path(failed.run_dir))
    assert failed.status == "failed" and rec["exit_code"] == 3 and "bad" in rec["error"]


def test_script_calling_start_attaches_to_the_exec_run(repo: Path) -> None:
    script = repo / "api.py"
    script.write_text(
        "from expkit.runs import start\nwith start(config={'lr': 0.5}, seed=None) as run:\n    run.log(1, loss=0.25)\n"
    )
    res = execute(ExecRequest([PY, str(script)], store=repo / "runs", seed=9))
    rec = read_run(Path(res.run_dir))
    assert rec["attached"] and rec["config"] == {"lr": 0.5}
    assert rec["seed"]["seed"] == 9 and rec["seed"]["source"] == "EXPKIT_SEED" and "torch" in rec["seed"]["seeded"]
    assert res.final_metrics["loss"] == 0.25
    assert len(list((repo / "runs").glob("2*"))) == 1  # no second run


def test_determinism_probe_of_a_command_stores_the_noise_floor(repo: Path) -> None:
    rep = probe_command([PY, "train.py"], seeds=3, store=repo / "runs", group="g")
    assert rep.repeat_identical and rep.repeat_max_abs_diff["loss"] == 0.0 and len(rep.run_ids) == 4
    assert rep.seed_std["loss"] > 0
    assert read_noise_floor(repo / "runs", "g") == rep.seed_std
    # a command that ignores the seed is caught: same seed differs
    noisy = repo / "noisy.py"
    noisy.write_text("import json, random\nprint(json.dumps({'step': 1, 'loss': random.random()}))\n")
    rep2 = probe_command([PY, str(noisy)], seeds=2, store=repo / "runs", group="g2")
    assert not rep2.repeat_identical and rep2.repeat_max_abs_diff["loss"] > 0


def test_determinism_probe_names_ops_that_refuse(repo: Path) -> None:
    # CPU kernels never refuse, so the script prints torch's own warning text (as a CUDA run would)
    script = repo / "cuda_like.py"
    script.write_text(
        "import json, os, sys\n"
        "assert os.environ['EXPKIT_DETERMINISTIC'] == 'warn'\n"
        "print('UserWarning: scatter_add_cuda_kernel does not have a deterministic implementation, but you set '\n"
        "      \"'torch.use_deterministic_algorithms(True, warn_only=True)'.\", file=sys.stderr)\n"
        "print(json.dumps({'step': 1, 'loss': int(os.environ['EXPKIT_SEED']) / 10}))\n"
    )
    rep = probe_command([PY, str(script)], seeds=2, store=repo / "runs", group="cuda")
    assert rep.refusing_ops == ("scatter_add_cuda_kernel",) and rep.repeat_identical
    assert rep.seed_range["loss"] == pytest.approx(0.1)


def test_determinism_probe_of_a_function() -> None:
    import torch

    def train(seed: int) -> dict[str, float]:
        torch.manual_seed(seed)
        w = torch.randn(8, 8)
        return {"loss": float((w @ w).sum())}

    rep = probe_function(train, seeds=3)
    assert rep.repeat_identical and rep.seeds == (0, 0, 1, 2) and rep.seed_std["loss"] > 0
    assert not torch.are_deterministic_algorithms_enabled()  # restored


def test_diff_ranks_config_first_and_catches_package_and_patch(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    dist = site / "expkit_probe_pkg-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: expkit-probe-pkg\nVersion: 1.0\n")
    monkeypatch.syspath_prepend(str(site))
    with start(config={"lr": 0.1, "bs": 8}, seed=1, store=repo / "runs", name="a") as run:
        run.log(1, loss=1.0)
    # an upgrade as pip does it: the old dist-info directory goes, a new one named with the version comes
    import shutil

    shutil.rmtree(dist)
    dist = site / "expkit_probe_pkg-1.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: expkit-probe-pkg\nVersion: 1.1\n")
    (repo / "train.py").write_text(TRAIN + "# tuned\n")
    with start(config={"lr": 0.2, "bs": 8}, seed=1, store=repo / "runs", name="b") as run:
        run.log(1, loss=0.8)
    d = diff_runs("a", "b", store=repo / "runs")
    keys = [(x.category, x.key) for x in d.differences]
    assert keys[0] == ("config", "lr") and ("package", "expkit-probe-pkg") in keys
    assert ("code", "uncommitted patch (sha256)") in keys and ("config", "bs") not in keys
    pkg = next(x for x in d.differences if x.key == "expkit-probe-pkg")
    assert (pkg.a, pkg.b) == ("1.0", "1.1")
    (loss,) = [m for m in d.metrics if m.name == "loss"]
    assert loss.delta == pytest.approx(-0.2)


def test_repro_exact_and_refusals(repo: Path) -> None:
    res = execute(ExecRequest([PY, "train.py", "0.2"], store=repo / "runs", seed=5, name="orig", data=["train.py"]))
    (repo / "train.py").write_text(TRAIN.replace("0.05", "0.5"))  # the tree moves on after the run
    rep = reproduce("orig", store=repo / "runs")
    assert rep.verdict == "exact" and rep.metrics["loss"][0] == rep.metrics["loss"][1]
    assert rep.data_mismatches and "train.py" in rep.data_mismatches[0]  # the input changed since
    assert read_run(repo / "runs" / rep.reproduction)["extra"]["repro_of"] == res.run_id
    assert rep.data_compared == ("train.py: full",)  # which kind of fingerprint was compared
    with pytest.raises(UsageError, match="not allowed"):
        reproduce("../x", store=repo / "runs")
