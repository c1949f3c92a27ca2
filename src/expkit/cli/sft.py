"""``expkit sft``: LoRA SFT on a local model, the label audit before it, the does-it-stop test after it,
parameter accounting, and the offline demo model and synthetic chat data.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

import typer

from expkit.cli.flags import fields_as_flags
from expkit.cli.output import emit
from expkit.errors import CheckFailed, UsageError

app = typer.Typer(
    help="LoRA SFT on the Hugging Face stack: audit the labels, train, check that the model stops.",
    no_args_is_help=True,
    invoke_without_command=True,
)

_LOSS_HELP = "Which tokens count: assistant (every assistant turn), completion (the last one), all."
_ON_ERROR_HELP = "Bad data lines: raise (exit 2) or skip (and count)."
_DROPPED_HELP = (
    "Accept a chat template that drops part of an assistant turn (a tool call, reasoning): a note, not exit 1."
)

# the library names its fields; these commands name the flags that set them
_FLAGS = {
    "steps": "--steps",
    "lora_r": "--lora-r",
    "batch_size": "--batch-size",
    "learning_rate": "--lr",
    "loss": "--loss",
    "n": "-n",
    "max_new_tokens": "--max-new-tokens",
    "min_stop_rate": "--min-stop-rate",
    "min_accuracy": "--min-accuracy",
    "show": "--show",
    "threads": "--threads",
    "lora_targets": "--targets",
    "match": "--match",
}


def _flag_names() -> AbstractContextManager[None]:
    """A UsageError whose message starts with a field name (``steps must be >= 1``) names the flag instead."""
    return fields_as_flags(_FLAGS)


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
    packing: bool = typer.Option(
        False,
        "--packing",
        help="Pack whole conversations into --max-length rows (TRL's BFD), keeping expkit's labels and restarting "
        "position ids at each conversation.",
    ),
    fix_generation_config: bool = typer.Option(
        True,
        "--fix-generation-config/--no-fix-generation-config",
        help="Put the trained end-of-turn id into generation_config.eos_token_id.",
    ),
    merge: bool = typer.Option(False, "--merge", help="Also write a merged model to OUT/merged."),
    on_error: str = typer.Option("raise", "--on-error", help=_ON_ERROR_HELP),
    store: Path = typer.Option(None, "--store", help="Run store (default $EXPKIT_STORE or ./runs)."),
    no_record: bool = typer.Option(False, "--no-record", help="Do not record the run in the run store."),
    seed: int = typer.Option(0, "--seed", help="Seed for LoRA init and data order."),
    threads: int = typer.Option(None, "--threads", help="torch threads (default: torch's choice)."),
    allow_dropped: bool = typer.Option(False, "--allow-dropped", help=_DROPPED_HELP),
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
    from expkit.finetune.training import SFTSettings, train_lora_sft_on_file
    from expkit.render.console import progress_steps
    from expkit.render.sft import render_sft_result

    with _flag_names():
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
            packing=packing,
            seed=seed,
            fix_generation_config=fix_generation_config,
            merge=merge,
            num_threads=threads,
            allow_dropped=allow_dropped,
        )
        settings.validate()
        with progress_steps(steps, "sft") as advance:
            result = train_lora_sft_on_file(
                model_dir=model,
                data_path=data,
                out_dir=out,
                settings=settings,
                on_error=on_error,  # type: ignore[arg-type]  # typer passes a str; the reader validates it
                store=store,
                record=not no_record,
                on_step=lambda step, value: advance(f"step {step} loss {value:.3f}"),
            )
    emit(result, json_out, human=render_sft_result)


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
    on_error: str = typer.Option("raise", "--on-error", help=_ON_ERROR_HELP),
    match: str = typer.Option(
        "expkit",
        "--match",
        help="Label convention: expkit (all the model generates after the generation prompt, through the "
        "end-of-turn token) or trl (TRL's {% generation %} spans).",
    ),
    allow_dropped: bool = typer.Option(False, "--allow-dropped", help=_DROPPED_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the audit as JSON (masked_fraction, problems ...)."),
) -> None:
    """Check which tokens count in the loss, before any training.

    Exit 1 when a hard check fails: an assistant turn not ending in a trained stop token, pad == end of
    turn, an example with no trained token, truncation that cuts the stop token, a chat template that drops
    part of an assistant turn (a tool call, reasoning_content; --allow-dropped accepts it). Conversations may
    carry a top-level "tools" list, assistant "tool_calls" with null content, and "tool"/"ipython" messages.

    Examples:

      expkit sft audit --model demo --data train.jsonl --show 1

      expkit sft audit --model demo --data train.jsonl --json --html audit.html

      expkit sft audit --model qwen3-dir --data train.jsonl --match trl
    """
    from expkit.errors import require
    from expkit.finetune.labels import audit_label_file
    from expkit.render.sft import render_file_audit, write_audit_html

    require("transformers")
    with _flag_names():
        result = audit_label_file(
            model_dir=model,
            data_path=data,
            loss=loss,  # LabelBuilder validates it
            eos_in_loss=not no_eos_in_loss,
            max_length=max_length,
            show=show,
            on_error=on_error,  # type: ignore[arg-type]  # typer passes a str; the reader validates it
            match=match,  # LabelBuilder validates it
            allow_dropped=allow_dropped,
        )
    if html is not None:
        write_audit_html(result, html, title=str(data))
    emit(result, json_out, human=lambda r: render_file_audit(r, html=html))
    if result.audit.problems:
        p = result.audit.problems[0]
        raise CheckFailed(
            f"label audit: {len(result.audit.problems)} problems; first: {p.check} at example {p.index} (line {p.line})"
        )


@app.command("check-stop")
def check_stop(
    model: Path = typer.Option(..., "--model", help="Base (or merged) model directory."),
    data: Path = typer.Option(..., "--data", help="Held-out JSONL; the last assistant turn is the expected answer."),
    adapter: Path = typer.Option(None, "--adapter", help="LoRA adapter directory (OUT/adapter of expkit sft)."),
    n: int = typer.Option(20, "-n", help="Prompts to generate from."),
    max_new_tokens: int = typer.Option(32, "--max-new-tokens", help="Generation budget per prompt."),
    min_stop_rate: float = typer.Option(0.9, "--min-stop-rate", help="Exit 1 below this stop rate."),
    min_accuracy: float = typer.Option(
        None, "--min-accuracy", help="Exit 1 below this answer accuracy too (default: reported, not judged)."
    ),
    show: int = typer.Option(3, "--show", help="Generations to print."),
    threads: int = typer.Option(None, "--threads", help="torch threads (default: torch's choice)."),
    json_out: bool = typer.Option(False, "--json", help="Print the check as JSON."),
) -> None:
    """Does the fine-tuned model stop? Greedy generation on held-out prompts.

    Reports the stop rate (the end-of-turn token was emitted before any token that starts a new turn; special
    tokens inside the turn, such as Command-R's <|END_RESPONSE|>, are part of it), answer accuracy, exact-match
    rate and mean generated length, and whether the saved generation_config stops on the end-of-turn token.
    Exit 1 below --min-stop-rate, or below --min-accuracy when given; the verdict names which failed.

    Examples:

      expkit sft check-stop --model demo --adapter sft-out/adapter --data held_out.jsonl -n 20

      expkit sft check-stop --model sft-out/merged --data held_out.jsonl --json

      expkit sft check-stop --model demo --adapter sft-out/adapter --data held_out.jsonl --min-accuracy 0.5
    """
    _quiet_hf()
    from expkit.finetune.chatdata import read_chat_file
    from expkit.finetune.stopping import StopQuery, check_stopping
    from expkit.render.sft import render_stop_check

    with _flag_names():
        query = StopQuery(
            n=n,
            max_new_tokens=max_new_tokens,
            min_stop_rate=min_stop_rate,
            num_threads=threads,
            min_accuracy=min_accuracy,
        )
        result = check_stopping(
            model_dir=model, adapter_dir=adapter, examples=read_chat_file(data).examples, query=query
        )
    emit(result, json_out, human=lambda r: render_stop_check(r, show=show))
    if not result.passed:
        from expkit.render.sft import stop_verdict

        raise CheckFailed(
            stop_verdict(result),
            hint="train with the end-of-turn token in the loss (see `expkit sft audit`)"
            if "stop rate" in result.failed
            else "the model stops but answers wrong: train longer or check the data",
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

      expkit sft params deepseek-v3 --lora-r 16     # 671B total, 37.6B active; says which linears peft leaves out
    """
    from expkit.memory.params import count_parameters
    from expkit.render.sft import render_parameter_count

    with _flag_names():
        counts = count_parameters(model, lora_r=lora_r, lora_alpha=lora_alpha, lora_targets=targets)
    emit(counts, json_out, human=render_parameter_count)


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
    from expkit.finetune.demomodel import provide_demo_model
    from expkit.render.sft import render_demo_model

    _quiet_hf()
    emit(provide_demo_model(out=out, quick=quick, rebuild=rebuild), json_out, human=render_demo_model)


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
    from expkit.finetune.chatdata import write_synthetic_chat
    from expkit.render.sft import render_chat_data

    names = [t.strip() for t in tasks.split(",") if t.strip()]
    written = write_synthetic_chat(out, n=n, seed=seed, tasks=names, system_turn=not no_system)
    emit(written, json_out, human=render_chat_data)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="sft")
