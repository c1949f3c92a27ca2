"""``expkit sft``: LoRA SFT on a local model, the label audit before it, the does-it-stop test after it,
parameter accounting, and the offline demo model and synthetic chat data.
"""

from __future__ import annotations

import sys
from html import escape
from pathlib import Path
from typing import Any

import typer

from expkit.cli.output import emit_json
from expkit.errors import CheckFailed, UsageError

app = typer.Typer(
    help="LoRA SFT on the Hugging Face stack: audit the labels, train, check that the model stops.",
    no_args_is_help=True,
    invoke_without_command=True,
)

_LOSS_HELP = "Which tokens count: assistant (every assistant turn), completion (the last one), all."


def _dump(obj: Any) -> None:
    emit_json(obj)


def _quiet_hf() -> None:
    """Progress bars and advisory warnings of datasets/transformers off: expkit shows its own progress."""
    import warnings

    from expkit.errors import require

    warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")
    warnings.filterwarnings("ignore", category=UserWarning, module="peft")
    datasets = require("datasets")  # the light install: say `pip install 'expkit[hf]'`, no traceback
    transformers = require("transformers")

    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


@app.callback()
def train(
    ctx: typer.Context,
    model: Path = typer.Option(None, "--model", help="Local model directory (config, weights, tokenizer)."),
    data: Path = typer.Option(None, "--data", help="JSONL: {messages: [...]} or {prompt, completion} per line."),
    out: Path = typer.Option(Path("sft-out"), "--out", "-o", help="Output directory (adapter/, merged/)."),
    lora_r: int = typer.Option(16, "--lora-r", help="LoRA rank."),
    lora_alpha: int = typer.Option(32, "--lora-alpha", help="LoRA alpha (scale alpha / r)."),
    targets: str = typer.Option("all-linear", "--targets", help="all-linear or module names, e.g. q_proj,v_proj."),
    steps: int = typer.Option(20, "--steps", help="Optimizer steps."),
    batch_size: int = typer.Option(8, "--batch-size", help="Examples per step."),
    lr: float = typer.Option(2e-4, "--lr", help="Learning rate."),
    max_length: int = typer.Option(512, "--max-length", help="Truncate examples to this many tokens."),
    loss: str = typer.Option("assistant", "--loss", help=_LOSS_HELP),
    no_eos_in_loss: bool = typer.Option(
        False, "--no-eos-in-loss", help="Mask the end-of-turn token out (reproduces a model that never stops)."
    ),
    fix_generation_config: bool = typer.Option(
        True,
        "--fix-generation-config/--no-fix-generation-config",
        help="Put the trained end-of-turn id into generation_config.eos_token_id.",
    ),
    merge: bool = typer.Option(False, "--merge", help="Also write a merged model to OUT/merged."),
    on_error: str = typer.Option("raise", "--on-error", help="Bad data lines: raise (exit 2) or skip (and count)."),
    store: Path = typer.Option(None, "--store", help="Run store (default $EXPKIT_STORE or ./runs)."),
    no_record: bool = typer.Option(False, "--no-record", help="Do not record the run in the run store."),
    seed: int = typer.Option(0, "--seed", help="Seed for LoRA init and data order."),
    threads: int = typer.Option(None, "--threads", help="torch threads (default: torch's choice)."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Train LoRA adapters with TRL's SFTTrainer on a local model, after auditing the labels.

    Runs offline (HF_HUB_OFFLINE=1 is set when unset). The run (config, data fingerprint, loss per step,
    adapter files) goes to the run store. Exit 1 when the label audit fails, or when the loss or gradient
    norm goes NaN/inf (training stops, the run is marked diverged, no adapter is saved).

    Examples:

      expkit sft demo-model --out demo && expkit sft data --out train.jsonl -n 500

      expkit sft --model demo --data train.jsonl --steps 100 --lr 2e-3 --out sft-out

      expkit sft check-stop --model demo --adapter sft-out/adapter --data held_out.jsonl
    """
    if ctx.invoked_subcommand is not None:
        return
    if model is None or data is None:
        raise UsageError("training needs --model DIR and --data FILE", hint="see `expkit sft --help`")
    _quiet_hf()
    from expkit.finetune.chatdata import read_chat_file
    from expkit.finetune.training import SFTSettings, train_lora_sft
    from expkit.render.console import progress_steps

    settings = SFTSettings(
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        targets=targets,
        steps=steps,
        batch_size=batch_size,
        learning_rate=lr,
        max_length=max_length,
        loss=loss,
        eos_in_loss=not no_eos_in_loss,
        seed=seed,
        fix_generation_config=fix_generation_config,
        merge=merge,
        num_threads=threads,
    )
    settings.validate()
    chat = read_chat_file(data, on_error=on_error)  # type: ignore[arg-type]
    with progress_steps(steps, "sft") as advance:
        result = train_lora_sft(
            model_dir=model,
            examples=chat.examples,
            out_dir=out,
            settings=settings,
            data_path=data,
            store=store,
            record=not no_record,
            on_step=lambda step, value: advance(f"step {step} loss {value:.3f}"),
        )
    if json_out:
        _dump({"result": result, "skipped_lines": chat.skipped})
        return
    c = result.contract
    print(
        f"trained {result.steps} steps on {result.examples} examples ({len(chat.skipped)} lines skipped) "
        f"in {result.train_s:.1f} s ({result.s_per_step:.3f} s/step)"
    )
    print(
        f"loss {result.first_loss:.3f} -> {result.last_loss:.3f}; trainable {result.trainable_params:,} of "
        f"{result.total_params:,} parameters; masked fraction {result.masked_fraction:.1%}"
    )
    fix = "fixed" if c.fixed else ("ok" if c.ok else "NOT MET (use --fix-generation-config)")
    print(
        f"stop-token contract: {c.end_of_turn.token} ({c.end_of_turn.id}) in generation_config.eos_token_id "
        f"{list(c.eos_ids_after)}: {fix}"
    )
    print(f"adapter: {result.adapter_dir}" + (f"; merged: {result.merged_dir}" if result.merged_dir else ""))
    if result.run_id:
        print(f"run: {result.run_id} ({result.run_dir})")
    if no_eos_in_loss:
        print(
            "note: --no-eos-in-loss: this model was not taught to stop; `expkit sft check-stop` will show it",
            file=sys.stderr,
        )


def _token_html(token: str, trained: bool) -> str:
    css = "t" if trained else "m"
    shown = escape(token).replace("\n", "&#8629;<br>")
    return f'<span class="{css}">{shown}</span>'


def render_audit_html(audit: Any, *, title: str) -> str:
    """One page: the summary, the problems, and each shown example with trained tokens highlighted."""
    rows = "".join(
        f"<li><b>{escape(p.check)}</b> example {p.index} (line {p.line}): {escape(p.message)}</li>"
        for p in audit.problems[:50]
    )
    examples = "".join(
        f"<h3>example {v.index}</h3><p class='tok'>{''.join(_token_html(t, k) for t, k in v.tokens)}</p>"
        for v in audit.shown
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>expkit sft audit</title><style>"
        "body{font-family:system-ui,sans-serif;max-width:1000px;margin:2rem auto}"
        ".tok{font-family:monospace;line-height:1.9}.tok span{border:1px solid #ddd;padding:0 1px;margin:0 1px}"
        ".t{background:#c7f0c7;color:#0b4d0b;font-weight:600}.m{background:#f2f2f2;color:#888}</style></head><body>"
        f"<h1>Label audit: {escape(title)}</h1>"
        f"<p>{audit.examples} examples, {audit.total_tokens} tokens, {audit.trained_tokens} trained; masked fraction "
        f"{audit.masked_fraction:.1%}. End of turn: {escape(audit.end_of_turn.token)} ({audit.end_of_turn.id}); "
        f"assistant spans: {escape(audit.span_source)}. <span class='t'>trained</span> "
        f"<span class='m'>masked</span></p>"
        + "".join(f"<p>note: {escape(n)}</p>" for n in audit.notes)
        + (f"<h2>{len(audit.problems)} problems</h2><ul>{rows}</ul>" if audit.problems else "<h2>No problems</h2>")
        + examples
        + "</body></html>"
    )


@app.command("audit")
def audit(
    model: Path = typer.Option(..., "--model", help="Local model directory (tokenizer + chat template)."),
    data: Path = typer.Option(..., "--data", help="JSONL chat or prompt/completion data."),
    show: int = typer.Option(2, "--show", help="Examples to print token by token (trained vs masked)."),
    loss: str = typer.Option("assistant", "--loss", help=_LOSS_HELP),
    no_eos_in_loss: bool = typer.Option(
        False, "--no-eos-in-loss", help="Audit the labels with the end of turn masked."
    ),
    max_length: int = typer.Option(512, "--max-length", help="The truncation length training will use."),
    html: Path = typer.Option(None, "--html", help="Also write the coloured tokens to this HTML file."),
    on_error: str = typer.Option("raise", "--on-error", help="Bad data lines: raise (exit 2) or skip (and count)."),
    json_out: bool = typer.Option(False, "--json", help="Print the audit as JSON (masked_fraction, problems ...)."),
) -> None:
    """Check which tokens count in the loss, before any training.

    Exit 1 when a hard check fails: an assistant turn not ending in a trained stop token, pad == end of
    turn, an example with no trained token, truncation that cuts the stop token.

    Examples:

      expkit sft audit --model demo --data train.jsonl --show 1

      expkit sft audit --model demo --data train.jsonl --json --html audit.html
    """
    from expkit.errors import require
    from expkit.finetune.chatdata import read_chat_file
    from expkit.finetune.labels import audit_labels, load_chat_tokenizer

    require("transformers")
    if show < 0:
        raise UsageError(f"--show must be >= 0, not {show}")
    chat = read_chat_file(data, on_error=on_error)  # type: ignore[arg-type]
    tok = load_chat_tokenizer(model)
    result = audit_labels(
        tokenizer=tok,
        examples=chat.examples,
        loss=loss,  # type: ignore[arg-type]
        eos_in_loss=not no_eos_in_loss,
        max_length=max_length,
        show=show,
    )
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(render_audit_html(result, title=str(data)), encoding="utf-8")
    if json_out:
        _dump({"audit": result, "skipped_lines": chat.skipped})
    else:
        from rich.text import Text

        from expkit.render.console import out_console

        con = out_console()
        plain = not con.is_terminal  # no colours in a pipe: trained tokens in [brackets]
        if result.shown:
            print("trained tokens " + ("in [brackets]" if plain else "in green") + ", masked ones plain")
        for view in result.shown:
            text = Text(f"example {view.index}: ")
            for token, trained in view.tokens:
                shown = token.replace("\n", "\u21b5\n")
                if plain and trained:
                    shown = f"[{shown}]"
                text.append(shown, style="bold green" if trained else "dim")
            con.print(text)
        per = result.masked_fraction_per_example
        print(
            f"{result.examples} examples ({len(chat.skipped)} lines skipped), {result.total_tokens} tokens, "
            f"{result.trained_tokens} trained; masked fraction {result.masked_fraction:.1%} overall, "
            f"{min(per):.1%}..{max(per):.1%} per example"
        )
        print(
            f"end of turn: {result.end_of_turn.token} ({result.end_of_turn.id}); pad id {result.pad_token_id}; "
            f"assistant spans: {result.span_source}"
        )
        for note in result.notes:
            print(f"note: {note}")
        for p in result.problems[:10]:
            print(f"FAIL {p.check}: example {p.index} (line {p.line}): {p.message}")
        if len(result.problems) > 10:
            print(f"... {len(result.problems) - 10} more problems")
        if html is not None:
            print(f"html: {html}", file=sys.stderr)
    if result.problems:
        p = result.problems[0]
        raise CheckFailed(
            f"label audit: {len(result.problems)} problems; first: {p.check} at example {p.index} (line {p.line})"
        )


@app.command("check-stop")
def check_stop(
    model: Path = typer.Option(..., "--model", help="Base (or merged) model directory."),
    data: Path = typer.Option(..., "--data", help="Held-out JSONL; the last assistant turn is the expected answer."),
    adapter: Path = typer.Option(None, "--adapter", help="LoRA adapter directory (OUT/adapter of expkit sft)."),
    n: int = typer.Option(20, "-n", help="Prompts to generate from."),
    max_new_tokens: int = typer.Option(32, "--max-new-tokens", help="Generation budget per prompt."),
    min_stop_rate: float = typer.Option(0.9, "--min-stop-rate", help="Exit 1 below this stop rate."),
    show: int = typer.Option(3, "--show", help="Generations to print."),
    threads: int = typer.Option(None, "--threads", help="torch threads (default: torch's choice)."),
    json_out: bool = typer.Option(False, "--json", help="Print the check as JSON."),
) -> None:
    """Does the fine-tuned model stop? Greedy generation on held-out prompts.

    Reports the stop rate (the end-of-turn token was emitted), answer accuracy, exact-match rate and mean
    generated length, and whether the saved generation_config stops on the end-of-turn token.

    Examples:

      expkit sft check-stop --model demo --adapter sft-out/adapter --data held_out.jsonl -n 20

      expkit sft check-stop --model sft-out/merged --data held_out.jsonl --json
    """
    _quiet_hf()
    from expkit.finetune.chatdata import read_chat_file
    from expkit.finetune.stopping import check_stopping

    chat = read_chat_file(data)
    result = check_stopping(
        model_dir=model,
        adapter_dir=adapter,
        examples=chat.examples,
        n=n,
        max_new_tokens=max_new_tokens,
        min_stop_rate=min_stop_rate,
        num_threads=threads,
    )
    if json_out:
        _dump(result)
    else:
        for case in result.cases[:show]:
            end = " <stop>" if case.stopped else " ... (no stop)"
            print(f"expected {case.expected!r}: {case.generated!r}{end}")
        c = result.contract
        print(
            f"stop rate {result.stop_rate:.0%} ({result.n} prompts); answer accuracy {result.answer_accuracy:.0%}; "
            f"exact match {result.exact_match_rate:.0%}; mean generated {result.mean_generated_tokens:.1f} tokens "
            f"(budget {result.max_new_tokens})"
        )
        print(
            f"generation_config.eos_token_id {list(c.eos_ids_after)} "
            f"{'includes' if c.ok else 'does NOT include'} {c.end_of_turn.token} ({c.end_of_turn.id})"
        )
    if not result.passed:
        raise CheckFailed(
            f"the model stops on {result.stop_rate:.0%} of prompts, below --min-stop-rate {result.min_stop_rate:.0%}",
            hint="train with the end-of-turn token in the loss (see `expkit sft audit`)",
        )


@app.command("params")
def params(
    model: str = typer.Argument(..., help="Model directory, config.json, or a catalog name (qwen2.5-0.5b)."),
    lora_r: int = typer.Option(None, "--lora-r", help="LoRA rank (omit for a full fine-tune)."),
    lora_alpha: float = typer.Option(None, "--lora-alpha", help="LoRA alpha (recorded; does not change counts)."),
    targets: str = typer.Option("all-linear", "--targets", help="all-linear or module names."),
    json_out: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
) -> None:
    """Parameter accounting for SFT: total, active per token, trainable, trainable fraction, training-state bytes.

    The same count as the memory ledger (expkit.memory.params): the model is built from config.json on
    the meta device, adapters counted by peft per layer kind (dense, MoE: fused experts as peft wraps them).
    MODEL may be a Hub ID whose config.json is in the local Hugging Face cache.

    Examples:

      expkit sft params qwen2.5-0.5b --lora-r 16      # seed C5.4: 494M, 8.80M trainable (1.78%)

      expkit sft params ./demo --lora-r 8 --targets q_proj,v_proj --json

      expkit sft params deepseek-v3 --lora-r 16     # 671B total, 37.6B active, LoRA on every layer kind
    """
    from expkit.memory.params import count_parameters

    c = count_parameters(model, lora_r=lora_r, lora_alpha=lora_alpha, lora_targets=targets)
    if json_out:
        _dump(c)
        return
    print(
        f"{c.model}: {c.total_params:,} parameters ({c.method}); trainable {c.trainable_params:,} = "
        f"{c.trainable_fraction:.2%} of the base, {c.trainable_fraction_of_all:.2%} of base + adapters"
    )
    print(
        f"training state (fp32 weight copy, grad, Adam m and v of the trainable parameters): "
        f"{c.training_state_bytes / 1e6:.1f} MB; counted by {c.counted_by}"
    )
    print(
        f"active per token: {c.active_params:,} ({c.active_params_with_embedding:,} with the input embedding, "
        f"as model cards count it)" + (f"; towers {c.tower_params:,}" if c.tower_params else "")
    )
    for kind in c.layer_kinds:
        print(
            f"  {kind.layers} x {kind.label}: {kind.params_per_layer:,} per layer, {kind.active_params_per_layer:,} "
            "active" + (f", {kind.adapter_params_per_layer:,} adapter" if c.lora_r else "")
        )
    for note in c.approximations:
        print(f"approximation: {note}")


@app.command("demo-model")
def demo_model(
    out: Path = typer.Option(None, "--out", "-o", help="Copy the model here (default: just print the cache path)."),
    quick: bool = typer.Option(False, "--quick", help="The tiny build the tests use (seconds, ~0.13M parameters)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Build again even when cached."),
    json_out: bool = typer.Option(False, "--json", help="Print the build as JSON."),
) -> None:
    """Build (once, then cached) the offline demo model: BPE tokenizer, Qwen2 model, ChatML template.

    Cached in $EXPKIT_CACHE/demo-model/<hash> (default ~/.cache/expkit). Loads with
    AutoModelForCausalLM.from_pretrained(DIR) like any local checkpoint.

    Examples:

      expkit sft demo-model --out demo

      expkit sft demo-model --quick --json
    """
    import shutil

    from expkit.finetune.demomodel import build_demo_model, demo_model_spec, ensure_demo_model

    _quiet_hf()
    if rebuild and out is not None:
        built = build_demo_model(out=out, spec=demo_model_spec(quick=quick))
    else:
        if rebuild:
            from expkit.finetune.demomodel import expkit_cache_dir

            shutil.rmtree(expkit_cache_dir() / "demo-model" / demo_model_spec(quick=quick).digest(), ignore_errors=True)
        built = ensure_demo_model(quick=quick)
        if out is not None:
            shutil.copytree(built.path, out, dirs_exist_ok=True)
            from dataclasses import replace

            built = replace(built, path=out)
    if json_out:
        _dump(built)
        return
    how = "from the cache" if built.cached else f"built in {built.build_s:.1f} s"
    print(
        f"demo model: {built.path} ({built.parameters:,} parameters, {how}; pre-training loss "
        f"{built.pretrain_loss_first:.2f} -> {built.pretrain_loss_last:.2f})"
    )


@app.command("data")
def data(
    out: Path = typer.Option(..., "--out", "-o", help="JSONL file to write."),
    n: int = typer.Option(500, "-n", help="Number of conversations."),
    seed: int = typer.Option(0, "--seed", help="Seed (use another seed for held-out data)."),
    tasks: str = typer.Option("add,reverse,km_to_m", "--tasks", help="Comma-separated: add, reverse, km_to_m."),
    no_system: bool = typer.Option(False, "--no-system", help="No system turn."),
    json_out: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
) -> None:
    """Write synthetic chat data with checkable answers (a + b, reversed words, km to m).

    Examples:

      expkit sft data --out train.jsonl -n 500

      expkit sft data --out held_out.jsonl -n 50 --seed 1
    """
    from expkit.finetune.chatdata import generate_chat_examples, write_chat_jsonl

    names = [t.strip() for t in tasks.split(",") if t.strip()]
    kwargs = {"system_prompt": None} if no_system else {}
    path = write_chat_jsonl(generate_chat_examples(n=n, seed=seed, tasks=names, **kwargs), out)
    if json_out:
        emit_json({"path": str(path), "conversations": n, "seed": seed, "tasks": names, "system_turn": not no_system})
        return
    print(f"wrote {n} conversations to {path}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="sft")
