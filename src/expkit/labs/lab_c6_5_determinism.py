"""Lab C6.5: one seed twice under deterministic algorithms is bitwise identical; another seed moves the
loss after 20 steps by more than a small "method change" does.

Every run is a trial of ``expkit sweep`` (local backend, one process and one thread each, recorded in
the lab's run store): five seeds with the flag, then the base seed again with the flag, twice without it,
and once with lr x1.2. Identity is judged on what the runs recorded: every step's loss and a SHA-256 of
the final parameters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from expkit.labs.base import (
    AtLeast,
    LabContext,
    LabOutput,
    Measurement,
    Needs,
    RuleChange,
    SeedFigure,
    Shown,
    Within,
    judged,
)
from expkit.labs.registry import lab

SEED_IDENTICAL = SeedFigure(
    "same_seed_identical",
    "same seed twice, deterministic algorithms",
    None,
    "",
    "identical runs under one seed need torch.use_deterministic_algorithms",
)
SEED_SPREAD_NATS = 0.14  # CLAIMS.md C6.5
SEED_SPREAD = SeedFigure(
    "seed_spread_20",
    "seed-to-seed difference after 20 steps",
    SEED_SPREAD_NATS,
    "nats",
    'seed-to-seed difference 0.14 after 20 steps, larger than many "method improvements"',
)
STEPS = 20  # the seed's "after 20 steps"
SEEDS = 5  # the "spread across 5 seeds"
LR_MAX = 3e-3
VARIANTS = ("flag_repeat", "noflag_a", "noflag_b")  # all with the base seed
METHOD = "lr_x1.2"  # the method change, run on every seed beside the plain runs: its effect is paired per seed
TRIAL_COMMAND = ("-c", "from expkit.labs.lab_c6_5_determinism import trial_main; trial_main()")


def _corpus():  # noqa: ANN202
    """A small local corpus: the first stdlib modules by name (nothing downloaded)."""
    import random
    import tempfile
    from pathlib import Path

    from expkit.train import load_corpus

    files = sorted(Path(random.__file__).parent.glob("*.py"))[:3]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.txt"
        path.write_text("".join(f.read_text(encoding="utf-8", errors="replace") for f in files))
        return load_corpus(path)


def trial_main() -> None:
    """One trial, in its own process: ``EXPKIT_CONFIG_VARIANT`` (seed, flag_repeat, noflag_a, noflag_b,
    lr_x1.2), ``_WIDTH``, ``_LAYERS``; the seed from ``EXPKIT_SEED``. Logs the loss of every step and writes
    the SHA-256 of the final parameters to ``$EXPKIT_RUN_DIR/params.sha256``."""
    import hashlib
    import os
    import sys
    from pathlib import Path

    import orjson
    import torch

    from expkit.hardware.threads import torch_threads
    from expkit.train import CharLMConfig, TrainConfig, WarmupCosine, setup_training, train_step

    env = os.environ
    variant = env["EXPKIT_CONFIG_VARIANT"]
    width, layers = int(env["EXPKIT_CONFIG_WIDTH"]), int(env["EXPKIT_CONFIG_LAYERS"])
    torch.use_deterministic_algorithms(not variant.startswith("noflag"))
    lr = LR_MAX * (1.2 if variant == "lr_x1.2" else 1.0)
    corpus = _corpus()
    cfg = TrainConfig(
        batch_size=8,
        seq_len=64,
        max_steps=STEPS,
        warmup_steps=5,
        lr_max=lr,
        lr_min=lr / 10,
        check_first_loss=False,
        check_grads=False,
        check_zero_grad=False,
    )
    # one thread: a model this small only loses to intra-op threading on 2 shared cores
    with torch_threads(1):
        setup = setup_training(
            model_config=CharLMConfig(block_size=64, n_layer=layers, n_head=2, n_embd=width),
            train_config=cfg,
            corpus=corpus,
            seed=int(env["EXPKIT_SEED"]),
            device="cpu",
            schedule=WarmupCosine(lr_max=lr, lr_min=lr / 10, warmup_steps=5, max_steps=STEPS),
        )
        for step in range(STEPS):
            loss = float(train_step(setup, step).loss)
            sys.stdout.write(orjson.dumps({"step": step + 1, "loss": loss}).decode() + "\n")
    digest = hashlib.sha256()
    for name, tensor in sorted(setup.module.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    Path(env["EXPKIT_RUN_DIR"], "params.sha256").write_text(digest.hexdigest())
    sys.stdout.flush()


def mean_pair_difference(values: list[float]) -> float:
    """Mean |a - b| over all pairs of distinct seeds: how far "another seed" moves the figure, the
    like-for-like statistic for the seed's "another seed moves the loss by 0.14".

    Example:
        >>> mean_pair_difference([1.0, 1.1, 1.3])   # (0.1 + 0.3 + 0.2) / 3
        0.2
    """
    import itertools

    pairs = list(itertools.combinations(values, 2))
    return round(sum(abs(a - b) for a, b in pairs) / len(pairs), 12)


# issue 36: the spread statistic changed after the lab first ran (c8990d2, 2026-11-29), from `git log -p`
SPREAD_TOLERANCE = "within +-50% of 0.14"
SPREAD_RULE = Within(
    SEED_SPREAD_NATS,
    rel=0.5,
    source="our tolerance: the seed gives one figure for an unstated model, data and lr; same size within +-50%",
)
_FIRST_SPREAD_RULE = SPREAD_RULE  # the first rule had the same tolerance, on the max - min range
RULE_HISTORY = (
    RuleChange(
        "seed_spread_20",
        "2026-11-30",
        "47feb89",
        first=f"max - min final loss over {SEEDS} seeds after 20 steps, {SPREAD_TOLERANCE}",
        changed=f"mean |final loss difference| between two of {SEEDS} seeds after 20 steps, {SPREAD_TOLERANCE}",
        why="the range grows with the number of seeds run: it measures the lab's choice of five, not one seed's effect",
        seed_text="'换个 seed 差 0.14' (change the seed and it differs by 0.14): a difference between one seed and "
        "another, which the mean over pairs of seeds estimates; a range over five seeds is a different quantity",
    ),
)


@lab(
    id="C6.5",
    title="Determinism and seed spread",
    claims=("C6.5",),
    seed=(SEED_IDENTICAL, SEED_SPREAD),
    rule_history=RULE_HISTORY,
)
def run(ctx: LabContext) -> LabOutput:
    import shutil
    import statistics
    import sys

    # each trial trains a torch model in its own process: without torch every trial would fail in the child and
    # the lab with them; the runner marks the lab `needs expkit[torch]` on this ImportError instead
    import torch  # noqa: F401

    from expkit.render.figures import new_figure, save_figure
    from expkit.runs.store import list_runs
    from expkit.stats.curves import load_curves
    from expkit.sweep import SweepRequest, plan_sweep, run_sweep

    width, layers = (32, 1) if ctx.quick else (64, 2)
    base = ctx.seed
    store = ctx.out_dir / "runs"
    shutil.rmtree(store, ignore_errors=True)  # a fresh store: the sweeps' groups are this run's alone
    cmd = [sys.executable, *TRIAL_COMMAND]
    model = [f"width={width}", f"layers={layers}"]
    plans = (
        plan_sweep(
            cmd,
            group="c6_5-seeds",
            grid=[f"variant=seed,{METHOD}", *model],
            seeds=range(base, base + SEEDS),
            config_args=False,
        ),
        plan_sweep(
            cmd, group="c6_5-checks", grid=[f"variant={','.join(VARIANTS)}", *model], seeds=[base], config_args=False
        ),
    )
    for plan in plans:
        res = run_sweep(SweepRequest(plan, store=store, backend="local", max_retries=1))
        if not res.complete:
            bad = next(o for o in res.outcomes if o.status != "finished")
            raise RuntimeError(f"trial {bad.label} of {plan.group} ended {bad.status}: {bad.error}")

    runs = {}  # (variant, seed) -> (final loss, losses per step, params sha256)
    for group in ("c6_5-seeds", "c6_5-checks"):
        for r in list_runs(store, where=[f"group={group}", "status=finished"]).runs:
            run_dir = Path(store) / r.id
            (curve,) = load_curves([run_dir], metric="loss")
            variant = _config_of(run_dir)["variant"]
            runs[(variant, r.seed)] = (float(curve.y[-1]), curve.y.tolist(), (run_dir / "params.sha256").read_text())
    finals = [runs[("seed", s)][0] for s in range(base, base + SEEDS)]
    first, repeat = runs[("seed", base)], runs[("flag_repeat", base)]
    noflag_a, noflag_b = runs[("noflag_a", base)], runs[("noflag_b", base)]
    identical = first[1] == repeat[1] and first[2] == repeat[2]
    identical_noflag = noflag_a[1] == noflag_b[1] and noflag_a[2] == noflag_b[2]
    max_noflag_diff = max(abs(a - b) for a, b in zip(noflag_a[1], noflag_b[1], strict=True))
    pair_mean = mean_pair_difference(finals)
    spread = max(finals) - min(finals)
    std = statistics.stdev(finals)
    # the method's effect on each seed, paired (lr x1.2 vs plain, same seed), then averaged over the seeds
    method_deltas = [abs(runs[(METHOD, s)][0] - runs[("seed", s)][0]) for s in range(base, base + SEEDS)]
    method_delta = statistics.mean(method_deltas)
    ratio = pair_mean / method_delta if method_delta > 0 else float("inf")

    fig, (ax1, ax2) = new_figure(2)
    for s in range(base, base + SEEDS):
        ax1.plot(range(1, STEPS + 1), runs[("seed", s)][1], label=f"seed {s}")
    ax1.set(xlabel="step", ylabel="train loss (nats/char)", title=f"{SEEDS} seeds, char LM {layers}x{width}")
    ax1.legend()
    ax2.bar(["mean |seed diff|", "seed range", "lr x1.2"], [pair_mean, spread, method_delta], color=["C0", "C0", "C3"])
    ax2.axhline(0.14, color="grey", lw=0.8, label="seed's 0.14")
    ax2.set(ylabel="|difference| in final loss", title=f"after {STEPS} steps")
    ax2.legend()
    path = save_figure(fig, ctx.figure_path("c6_5_seed_spread.png"))

    # "the flag is needed": shown when two runs without it differ. Runs that agree on a CPU do not refute it: the
    # nondeterminism the flag removes (atomics in scatter/index_add backward, cuBLAS workspaces) is a GPU's, so
    # there the claim is not measured here (issue 22: the old 'differs' cause was the same two runs restated)
    if identical_noflag and ctx.device != "cuda":
        flag_needed = judged(
            "flag_needed",
            f"seed {base} twice WITHOUT the flag: the runs differ",
            ctx.device,
            "",
            rule=Needs("a CUDA GPU: the kernels whose order the flag fixes (atomics, cuBLAS workspaces) are a GPU's"),
            seed=SEED_IDENTICAL,
            detail=f"here the two runs were bitwise identical without the flag (max |loss difference| "
            f"{max_noflag_diff:.3g})",
        )
    else:
        flag_needed = judged(
            "flag_needed",
            f"seed {base} twice WITHOUT the flag: the runs differ",
            not identical_noflag,
            "",
            rule=Shown("without the flag the same seed gives different runs (the flag is needed)"),
            seed=SEED_IDENTICAL,
            detail=f"max |loss difference| {max_noflag_diff:.3g} nats",
        )
    measurements = (
        judged(
            "same_seed_identical",
            f"seed {base} twice under use_deterministic_algorithms: every step's loss and "
            "the final parameters bitwise equal",
            identical,
            "",
            rule=Shown("the same seed under the flag gives bitwise-identical runs"),
            seed=SEED_IDENTICAL,
            detail=f"final loss {first[0]!r} and {repeat[0]!r}; parameter SHA-256 "
            f"{'equal' if first[2] == repeat[2] else 'DIFFERENT'}",
        ),
        flag_needed,
        Measurement(
            "noflag_max_diff",
            f"seed {base} twice WITHOUT the flag: max |loss difference| over the steps",
            max_noflag_diff,
            "nats",
            detail=f"parameter SHA-256 {'equal' if noflag_a[2] == noflag_b[2] else 'DIFFERENT'}",
        ),
        judged(
            "seed_spread_20",
            f"mean |final loss difference| between two of {SEEDS} seeds after {STEPS} steps",
            pair_mean,
            "nats",
            rule=SPREAD_RULE,
            seed=SEED_SPREAD,
            detail="per seed: " + ", ".join(f"{v:.4f}" for v in finals),
        ),
        Measurement(
            "seed_range_20",
            f"max - min final loss over {SEEDS} seeds",
            spread,
            "nats",
            detail="grows with the number of seeds; not the seed's statistic. Under the rule as first stated "
            f"({SPREAD_TOLERANCE}) it would be {_FIRST_SPREAD_RULE.judge(spread).kind} (rule history)",
        ),
        Measurement("seed_std_20", f"seed-to-seed std of final loss ({SEEDS} seeds, n-1)", std, "nats"),
        Measurement(
            "lr_change_delta",
            f"mean over {SEEDS} seeds of |final loss change| from lr_max x1.2 (paired: same seed)",
            method_delta,
            "nats",
            detail="per seed: " + ", ".join(f"{d:.4f}" for d in method_deltas),
        ),
        judged(
            "seed_vs_method",
            f"mean |seed difference| / mean paired |lr x1.2 change|, {SEEDS} seeds",
            ratio,
            "x",
            rule=AtLeast(
                1.0, source="the seed's 'larger than many method improvements', tested on one method change: lr x1.2"
            ),
            seed=SEED_SPREAD,
        ),
    )
    explanation = (
        f"{2 * SEEDS + len(VARIANTS)} runs of a char LM ({layers} layer, width {width}, one CPU thread each), launched "
        f"as two expkit sweeps and recorded in the lab's run store, {STEPS} steps each. Seed {base} twice under "
        f"torch.use_deterministic_algorithms(True): "
        f"{'every loss and the parameter hash matched bit for bit' if identical else 'the runs DIFFERED'}. "
        f"Twice without the flag: {'also identical' if identical_noflag else 'different'} "
        f"(max |loss difference| {max_noflag_diff:.3g}), so "
        + (
            "the 'flag needed' half is not shown on this machine: its kernels are deterministic without it. On a "
            "GPU, atomics in scatter/index_add backward and cuBLAS workspaces make runs drift without the flag (and "
            "CUBLAS_WORKSPACE_CONFIG must be set).\n\n"
            if identical_noflag
            else "the flag is what makes the runs identical here.\n\n"
        )
        + f"Another seed moves the final loss by {pair_mean:.3f} nats on average (mean |difference| over the "
        f"{SEEDS * (SEEDS - 1) // 2} pairs of {SEEDS} seeds, the seed's statistic; the max-min range, "
        f"{spread:.3f}, grows with the number of seeds and is not it), against the seed's {SEED_SPREAD.value}. "
        f"Raising the learning rate by 20% moved it by {method_delta:.3f} on average over the same {SEEDS} seeds "
        "(each seed against itself): "
        + (
            f"{ratio:.1f}x less than another seed does, so a single-seed comparison of such a change would read seed "
            "noise as a method effect."
            if ratio >= 1
            else f"more than another seed does ({ratio:.2f}x), so this change shows through seed noise."
        )
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))


def _config_of(run_dir: Path) -> dict[str, Any]:
    """A run's ``config.json`` (the sweep records each trial's config there)."""
    import orjson

    return orjson.loads((run_dir / "config.json").read_bytes())
