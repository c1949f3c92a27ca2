"""Score expkit on the outside batch: each config through the CLI (``sft params``, ``mem`` train and infer,
``roofline``, all ``--json``, in a fresh process per config) against the truths of ``outside_truths``.

Each figure is ``exact``, ``within 1%``, ``off`` (``off, flagged`` when expkit's output names an
approximation or an assumption), ``refused`` (exit 2, one line), ``crash`` (exit 3 or a traceback) or
``no truth`` (the truth itself could not be computed; the reason is printed).

    .venv/bin/python tests/models/outside/score_outside.py --part dev [--out results.json] [--jobs 2]

``--part``: dev, held-out (once, at the end: see README.md) or all; ``split.json`` holds the split.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
CONTEXTS = (4096, 32768)
FIGURES = (
    "params.total",
    "params.active",
    "lora.all_linear",
    "lora.default",
    "train.trainable_full",
    "train.trainable_lora",
    "infer.kv_4k",
    "infer.kv_32k",
    "infer.weights",
    "roofline.weight_bytes",
    "roofline.kv_4k",
)


# a note that says the figure rests on an assumption about how the config is read (the generic notes of every
# ledger, such as uniform routing or the prefill's terms, do not count)
FLAG_WORDS = ("assum", "does not know", "not modeled", "approximat", "treated as", "read as")


def _cli(*args: str) -> tuple[int, dict[str, Any]]:
    """(exit code, JSON envelope) of ``expkit ARGS --json`` in this process."""
    from typer.testing import CliRunner

    from expkit.cli.app import app

    res = CliRunner().invoke(app, [*args, "--json"])
    try:
        env = json.loads(res.stdout)
    except ValueError:
        tb = "".join(traceback.format_exception(res.exc_info[1])) if res.exc_info and res.exc_info[1] else ""
        env = {"error": {"message": (res.stdout + tb)[-600:]}}
    return res.exit_code, env


def _notes(result: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("approximations", "notes", "assumptions"):
        val = result.get(key)
        if isinstance(val, list):
            out += [str(v) for v in val]
    return out


def _truths(name: str) -> dict[str, Any]:
    """Every truth of ``name``, or the reason it could not be computed."""
    import outside_truths as t

    out: dict[str, Any] = {}

    def put(key: str, fn: Any) -> None:
        try:
            out[key] = fn()
        except Exception as exc:  # noqa: BLE001  (a truth that cannot be computed is reported, not scored)
            out[key] = {"no_truth": f"{type(exc).__name__}: {str(exc)[:200]}"}

    encdec = t.is_encoder_decoder(name)
    put("params.total", lambda: t.total_params(name))
    if encdec:

        def encdec_active() -> int:
            m = t.meta_model(name)
            head = m.get_output_embeddings()
            return t.total_params(name) - m.get_input_embeddings().weight.numel() + (head.weight.numel() if head else 0)

        put("params.active", encdec_active)
    else:
        put("params.active", lambda: t.active_params(name))
    put("lora.all_linear", lambda: t.peft_trainable(name, "all-linear"))
    defaults = None
    try:
        defaults = t.peft_default_targets(name)
    except Exception:  # noqa: BLE001  (peft without a default for this type: no default-target figure)
        defaults = None
    out["_default_targets"] = defaults
    if defaults:
        put("lora.default", lambda: t.peft_trainable(name, defaults))
    else:
        out["lora.default"] = {"no_truth": "peft has no default targets for this model type"}
    put("train.trainable_full", lambda: t.trainable_params(name))
    out["train.trainable_lora"] = out["lora.all_linear"]
    if encdec:
        put("infer.kv_4k", lambda: t.encdec_cache_bytes(name, 4096))
        put("infer.kv_32k", lambda: t.encdec_cache_bytes(name, 32768))
        put("roofline.weight_bytes", lambda: t.encdec_decode_weight_bytes(name))
    else:
        put("infer.kv_4k", lambda: t.cache_bytes(name, 4096))
        put("infer.kv_32k", lambda: t.cache_bytes(name, 32768))
        put("roofline.weight_bytes", lambda: t.decode_weight_bytes(name))
    out["roofline.kv_4k"] = out["infer.kv_4k"]
    put("infer.weights", lambda: t.stored_weight_bytes(name))
    return out


def _expkit_figures(name: str, default_targets: list[str] | None) -> dict[str, Any]:
    """expkit's figure for each key, or {"exit": code, "error": ...} for a refusal or crash, plus the notes."""
    d = str(HERE / "configs" / name)
    out: dict[str, Any] = {}
    notes: set[str] = set()

    def run(keys: dict[str, Any], *args: str) -> None:
        try:
            code, env = _cli(*args)
        except Exception as exc:  # noqa: BLE001  (anything the CLI raises is a crash of that figure)
            code, env = 3, {"error": {"message": f"{type(exc).__name__}: {exc}"}}
        if code != 0 or "result" not in env:
            err = env.get("error")
            msg = err.get("message") if isinstance(err, dict) else str(err)
            for k in keys:
                out[k] = {"exit": code, "error": str(msg)[:400]}
            return
        res = env["result"]
        notes.update(_notes(res))
        for k, get in keys.items():
            try:
                out[k] = get(res)
            except Exception as exc:  # noqa: BLE001  (a figure missing from the output is a crash)
                out[k] = {"exit": 3, "error": f"figure missing from the output: {type(exc).__name__}: {exc}"}

    def line(res: dict[str, Any], name_: str) -> int:
        return next(ln["bytes"] for ln in res["lines"] if ln["name"] == name_)

    def kv_part(res: dict[str, Any]) -> int:
        return next(p["bytes"] for p in res["parts"] if p["name"] == "KV-cache attention")

    counts = {"params.total": lambda r: r["total_params"], "params.active": lambda r: r["active_params"]}
    run(counts, "sft", "params", d)
    run(
        {"lora.all_linear": lambda r: r["trainable_params"]},
        *("sft", "params", d, "--lora-r", "8"),
        "--targets=all-linear",
    )
    if default_targets:
        run(
            {"lora.default": lambda r: r["trainable_params"]},
            *("sft", "params", d, "--lora-r", "8", "--targets", ",".join(default_targets)),
        )
    run({"train.trainable_full": lambda r: r["trainable_params"]}, "mem", d, "--mode", "train")
    run(
        {"train.trainable_lora": lambda r: r["trainable_params"]},
        *("mem", d, "--mode", "train", "--method", "lora", "--lora-r", "8", "--lora-targets", "all-linear"),
    )
    run(
        {"infer.kv_4k": lambda r: line(r, "KV cache"), "infer.weights": lambda r: line(r, "weights")},
        *("mem", d, "--mode", "infer", "--context", "4096"),
    )
    run({"infer.kv_32k": lambda r: line(r, "KV cache")}, "mem", d, "--mode", "infer", "--context", "32768")
    run(
        {"roofline.weight_bytes": lambda r: r["weight_bytes"], "roofline.kv_4k": kv_part},
        *("roofline", "--model", d, "--gpu", "H100", "--batch", "1", "--context", "4096"),
    )
    out["_notes"] = sorted(notes)
    return out


def is_flagged(notes: list[str]) -> bool:
    return any(w in n.lower() for n in notes for w in FLAG_WORDS)


def classify(truth: Any, got: Any, flagged: bool) -> str:
    if isinstance(got, dict) and got.get("exit") not in (0, 2):
        return "crash"  # a traceback is a crash whether or not the truth could be computed
    if isinstance(truth, dict) or truth is None:
        return "no truth"
    if isinstance(got, dict):
        return "refused"
    if got == truth:
        return "exact"
    if truth and abs(got - truth) <= 0.01 * abs(truth):
        return "within 1%"
    return "off, flagged" if flagged else "off"


def score_one(name: str) -> dict[str, Any]:
    """Run in a fresh process: truths, expkit's figures, the class of each figure."""
    sys.path.insert(0, str(HERE))
    truths = _truths(name)
    got = _expkit_figures(name, truths.get("_default_targets"))
    notes = got.get("_notes", [])
    flagged = is_flagged(notes)
    rows = {}
    for fig in FIGURES:
        t, g = truths.get(fig), got.get(fig)
        if fig == "lora.default" and g is None:
            g = {"exit": 0, "error": "not run"}
        rows[fig] = {"class": classify(t, g, flagged), "truth": t, "expkit": g}
    return {"name": name, "figures": rows, "notes": notes}


def _run_child(name: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--one", name], capture_output=True, text=True, timeout=1800, check=False
    )
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        crashed = {f: {"class": "crash", "truth": None, "expkit": proc.stderr[-400:]} for f in FIGURES}
        return {"name": name, "figures": crashed, "notes": []}


def _fmt(v: Any) -> str:
    if isinstance(v, dict):
        return (v.get("no_truth") or v.get("error") or str(v))[:90]
    return f"{v:,.0f}" if isinstance(v, (int, float)) else str(v)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("dev", "held-out", "all"), default="dev")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--one")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--from-json", nargs="*", help="print saved results (later files replace earlier by name)")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(score_one(args.one), default=str))
        return
    split = json.loads((HERE / "split.json").read_text())
    names = split["dev"] + split["held_out"] if args.part == "all" else split[args.part.replace("-", "_")]
    if args.only:
        names = [n for n in names if n in args.only]
    if args.from_json:
        saved = {r["name"]: r for f in args.from_json for r in json.loads(Path(f).read_text())}
        results = [saved[n] for n in sorted(names) if n in saved]
        for r in results:  # classified again by this file's rules
            for row in r["figures"].values():
                row["class"] = classify(row["truth"], row["expkit"], is_flagged(r["notes"]))
    else:
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(_run_child, sorted(names)))
    per_figure: dict[str, Counter[str]] = {f: Counter() for f in FIGURES}
    for r in results:
        print(f"\n== {r['name']}")
        for fig, row in r["figures"].items():
            per_figure[fig][row["class"]] += 1
            if row["class"] == "exact":
                print(f"  {fig:24s} exact {_fmt(row['truth'])}")
            else:
                t, g = row["truth"], row["expkit"]
                rel = ""
                if isinstance(t, (int, float)) and isinstance(g, (int, float)) and t:
                    rel = f" ({(g - t) / t:+.3%})"
                print(f"  {fig:24s} {row['class']}: expkit {_fmt(g)} truth {_fmt(t)}{rel}")
        for n in r["notes"]:
            print(f"    note: {n[:160]}")
    print(f"\n== summary per figure (configs: {len(results)})")
    classes = ("exact", "within 1%", "off", "off, flagged", "refused", "crash", "no truth")
    print(f"  {'figure':24s} " + " ".join(f"{c:>12s}" for c in classes))
    total: Counter[str] = Counter()
    for fig, c in per_figure.items():
        total.update(c)
        print(f"  {fig:24s} " + " ".join(f"{c[k]:12d}" for k in classes))
    print(f"  {'all':24s} " + " ".join(f"{total[k]:12d}" for k in classes))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
