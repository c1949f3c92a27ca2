"""``expkit sft`` for a person: the training summary, the label audit (terminal and HTML), the stop test,
the parameter accounting and the demo model, each typed against its result class."""

from __future__ import annotations

import sys
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from expkit.finetune.chatdata import ChatDataWritten
    from expkit.finetune.demomodel import DemoModel
    from expkit.finetune.labels import FileAudit, LabelAudit
    from expkit.finetune.stopping import StopCheck
    from expkit.finetune.training import SFTResult
    from expkit.models.counting import ParameterCount

__all__ = [
    "audit_html",
    "render_chat_data",
    "render_demo_model",
    "render_file_audit",
    "render_parameter_count",
    "render_sft_result",
    "render_stop_check",
    "stop_verdict",
    "write_audit_html",
]


def render_sft_result(result: SFTResult) -> None:
    c = result.contract
    print(
        f"trained {result.steps} steps on {result.examples} examples ({len(result.skipped_lines)} lines skipped) "
        f"in {result.train_s:.1f} s ({result.s_per_step:.3f} s/step)"
    )
    if result.rows > result.examples:
        print(
            f"{result.rows} rows: {result.rows - result.examples} earlier assistant turns the template renders "
            "otherwise as the last turn were trained in rows of their own (see `expkit sft audit`)"
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
    if not result.settings.eos_in_loss:
        print(
            "note: --no-eos-in-loss: this model was not taught to stop; `expkit sft check-stop` will show it",
            file=sys.stderr,
        )


def _visible(text: str) -> str:
    """Template and chat text with escape sequences and control characters (NUL included) shown as ``\\xNN``:
    a token is printed one by one, so a sequence split over tokens must not reach the terminal or the page."""
    from expkit.diagnose.logtext import sanitize_for_terminal

    return sanitize_for_terminal(text)


def _token_html(token: str, trained: bool) -> str:
    css = "t" if trained else "m"
    shown = escape(_visible(token)).replace("\n", "&#8629;<br>")
    return f'<span class="{css}">{shown}</span>'


def _row_of(turn: int | None) -> str:
    """How a shown row is named: an earlier turn's own row (labels.ExampleLabels.turn_rows) says which turn."""
    return "" if turn is None else f", row of message {turn} (an earlier turn trained as the last turn)"


def audit_html(audit: LabelAudit, *, title: str) -> str:
    """One page: the summary, the problems, and each shown example with trained tokens highlighted."""
    eot = audit.end_of_turn
    rows = "".join(
        f"<li><b>{escape(p.check)}</b> example {p.index} (line {p.line}): {escape(_visible(p.message))}</li>"
        for p in audit.problems[:50]
    )
    examples = "".join(
        f"<h3>example {v.index}{escape(_row_of(v.turn))}</h3>"
        f"<p class='tok'>{''.join(_token_html(t, k) for t, k in v.tokens)}</p>"
        for v in audit.shown
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>expkit sft audit</title><style>"
        "body{font-family:system-ui,sans-serif;max-width:1000px;margin:2rem auto}"
        ".tok{font-family:monospace;line-height:1.9}.tok span{border:1px solid #ddd;padding:0 1px;margin:0 1px}"
        ".t{background:#c7f0c7;color:#0b4d0b;font-weight:600}.m{background:#f2f2f2;color:#888}</style></head><body>"
        f"<h1>Label audit: {escape(_visible(title))}</h1>"
        f"<p>{audit.examples} examples, {audit.total_tokens} tokens, {audit.trained_tokens} trained; masked fraction "
        f"{audit.masked_fraction:.1%}. End of turn: {escape(_visible(eot.token))} ({eot.id}); "
        f"assistant spans: {escape(audit.span_source)}. <span class='t'>trained</span> "
        f"<span class='m'>masked</span></p>"
        + "".join(f"<p>note: {escape(_visible(n))}</p>" for n in audit.notes)
        + (f"<h2>{len(audit.problems)} problems</h2><ul>{rows}</ul>" if audit.problems else "<h2>No problems</h2>")
        + examples
        + "</body></html>"
    )


def write_audit_html(result: FileAudit, path: Path, *, title: str) -> Path:
    """Write ``audit_html`` of the audit to ``path`` (parents created) and return it.

    Raises:
        InputError: ``path`` is a FIFO (the write blocked until a reader came: round five of issue 36), a
            device, a folder or a symlink loop.
    """
    from expkit.data.sources import check_replaceable

    check_replaceable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(audit_html(result.audit, title=title), encoding="utf-8")
    return path


def _print_trl_differences(audit: LabelAudit) -> None:
    """The label convention, and where expkit's labels differ from TRL's, rule by rule."""
    trl = audit.trl
    print(f"labels: {audit.match} convention" + (" (--match trl)" if audit.match == "trl" else ""))
    if trl is None:
        return
    if trl.trl_template is None:
        print(f"TRL: {trl.reason}")
        return
    if not trl.rules:
        extra = f"; {trl.reason}" if trl.reason else ""
        print(f"TRL ({trl.trl_template}): same trained tokens on {trl.conversations_compared} conversations{extra}")
        return
    print(f"TRL ({trl.trl_template}) trains differently on {trl.conversations_compared} conversations compared:")
    for rule, n in sorted(trl.rules.items()):
        example = next((d for d in trl.first if d.rule == rule), None)
        shown = f" e.g. {example.side}: {example.text!r}" if example is not None else ""
        print(f"  {rule}: {n} conversations;{shown}")


def render_file_audit(result: FileAudit, *, html: Path | None = None) -> None:
    """The shown examples token by token (trained in green, or [brackets] in a pipe), then the summary,
    notes and the first ten problems; ``html`` names the page written beside (on stderr)."""
    from rich.text import Text

    from expkit.render.console import out_console

    audit = result.audit
    con = out_console()
    plain = not con.is_terminal  # no colours in a pipe: trained tokens in [brackets]
    if audit.shown:
        print("trained tokens " + ("in [brackets]" if plain else "in green") + ", masked ones plain")
    for view in audit.shown:
        text = Text(f"example {view.index}{_row_of(view.turn)}: ")
        for token, trained in view.tokens:
            shown = _visible(token).replace("\n", "\u21b5\n")
            if plain and trained:
                shown = f"[{shown}]"
            text.append(shown, style="bold green" if trained else "dim")
        con.print(text)
    per = audit.masked_fraction_per_example
    print(
        f"{audit.examples} examples ({len(result.skipped_lines)} lines skipped), {audit.total_tokens} tokens, "
        f"{audit.trained_tokens} trained; masked fraction {audit.masked_fraction:.1%} overall, "
        f"{min(per):.1%}..{max(per):.1%} per example"
    )
    print(
        f"end of turn: {audit.end_of_turn.token} ({audit.end_of_turn.id}); pad id {audit.pad_token_id}; "
        f"assistant spans: {audit.span_source}"
    )
    for note in audit.notes:
        print(f"note: {note}")
    _print_trl_differences(audit)
    for p in audit.problems[:10]:
        print(f"FAIL {p.check}: example {p.index} (line {p.line}): {p.message}")
    if len(audit.problems) > 10:
        print(f"... {len(audit.problems) - 10} more problems")
    if html is not None:
        print(f"html: {html}", file=sys.stderr)


def render_stop_check(result: StopCheck, *, show: int = 3) -> None:
    """The first ``show`` generations, then the rates and whether generation_config stops on the end of turn."""
    for case in result.cases[:show]:
        end = " <stop>" if case.stopped else " ... (no stop)"
        print(f"expected {case.expected!r}: {case.generated!r}{end}")
    c = result.contract
    print(
        f"stop rate {result.stop_rate:.0%} ({result.n} prompts); answer accuracy {result.answer_accuracy:.0%}; "
        f"exact match {result.exact_match_rate:.0%}; mean generated {result.mean_generated_tokens:.1f} tokens "
        f"(budget {result.max_new_tokens})"
    )
    print(stop_verdict(result))
    print(
        f"generation_config.eos_token_id {list(c.eos_ids_after)} "
        f"{'includes' if c.ok else 'does NOT include'} {c.end_of_turn.token} ({c.end_of_turn.id})"
    )


def stop_verdict(result: StopCheck) -> str:
    """One line: each judged figure against its mark, and which failed."""

    def mark(name: str, value: float, flag: str, limit: float) -> str:
        side = "below" if name in result.failed else "at or above"
        return f"{name} {value:.0%} ({side} {flag} {limit:.0%})"

    parts = [mark("stop rate", result.stop_rate, "--min-stop-rate", result.min_stop_rate)]
    if result.min_accuracy is not None:
        parts.append(mark("answer accuracy", result.answer_accuracy, "--min-accuracy", result.min_accuracy))
    if not result.failed:
        return "check-stop passed: " + "; ".join(parts)
    return f"check-stop failed on {' and '.join(result.failed)}: " + "; ".join(parts)


def render_parameter_count(c: ParameterCount) -> None:
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
        if c.lora_r and (kind.lora_adapted or kind.lora_left_out):
            print(f"      LoRA on: {', '.join(kind.lora_adapted) or 'none'}")
            if kind.lora_left_out:
                print(f"      left out by peft (frozen, no adapter): {', '.join(kind.lora_left_out)}")
    for note in c.approximations:
        print(f"approximation: {note}")


def render_demo_model(built: DemoModel) -> None:
    how = "from the cache" if built.cached else f"built in {built.build_s:.1f} s"
    print(
        f"demo model: {built.path} ({built.parameters:,} parameters, {how}; pre-training loss "
        f"{built.pretrain_loss_first:.2f} -> {built.pretrain_loss_last:.2f})"
    )


def render_chat_data(written: ChatDataWritten) -> None:
    print(f"wrote {written.conversations} conversations to {written.path}")
