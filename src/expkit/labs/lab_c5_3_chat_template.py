"""Lab C5.3: the tokenizer and the chat template decide how a conversation becomes tokens and which
tokens count in the loss. One conversation rendered, tokenized and masked, shown token by token.
"""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_BEHAVIOUR = SeedFigure(
    "template_decides_loss",
    "the template decides which tokens count",
    None,
    "",
    "tokenizer.json + the chat template decide tokens and loss (behaviour)",
)


@lab(id="C5.3", title="The chat template decides which tokens count", claims=("C5.3",), seed=(SEED_BEHAVIOUR,))
def run(ctx: LabContext) -> LabOutput:
    from expkit.finetune.chatdata import generate_chat_examples
    from expkit.finetune.demomodel import ensure_demo_model
    from expkit.finetune.labels import IGNORE, LabelBuilder, load_chat_tokenizer
    from expkit.render.figures import new_figure, save_figure

    demo = ensure_demo_model(quick=ctx.quick)
    tok = load_chat_tokenizer(demo.path)
    examples = generate_chat_examples(n=200 if ctx.quick else 2000, seed=ctx.seed + 3)
    convo = examples[0]
    rendered = tok.apply_chat_template(list(convo.messages), tokenize=False)
    marked = LabelBuilder(tok)  # transformers' assistant mask from the {% generation %} markers
    one = marked.build(convo)
    tokens = [tok.convert_tokens_to_string([t]) for t in tok.convert_ids_to_tokens(list(one.input_ids))]
    trained = [lab != IGNORE for lab in one.labels]
    eot = marked.end_of_turn
    eot_trained = any(t == eot.id and m for t, m in zip(one.input_ids, trained, strict=True))
    # the same labels derived without the markers (rendering each turn as a prefix): must agree
    plain = load_chat_tokenizer(demo.path)
    plain.chat_template = plain.chat_template.replace("{%- generation %}", "").replace("{%- endgeneration %}", "")
    derived = LabelBuilder(plain)
    agree = sum(marked.build(ex).labels == derived.build(ex).labels for ex in examples)
    # the classic template bug: markers that close before <|im_end|> leave the stop token out of the loss
    bad = load_chat_tokenizer(demo.path)
    bad.chat_template = bad.chat_template.replace(
        "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}",
        "{%- generation %}{{- message['content'] }}{%- endgeneration %}{{- '<|im_end|>' }}",
    )
    bad_one = LabelBuilder(bad).build(convo)
    bad_eot_trained = any(
        t == eot.id and lab != IGNORE for t, lab in zip(bad_one.input_ids, bad_one.labels, strict=True)
    )

    # figure: the conversation as a strip of tokens, trained ones green
    fig, (ax,) = new_figure(1, width_in=12, height_in=3.2)
    x, y = 0.0, 0.0
    for text, is_trained in zip(tokens, trained, strict=True):
        label = text.replace("\n", "\\n")
        w = 0.12 + 0.075 * len(label)
        if x + w > 12:
            x, y = 0.0, y - 0.5
        ax.add_patch(
            __import__("matplotlib.patches", fromlist=["Rectangle"]).Rectangle(
                (x, y), w - 0.02, 0.4, color="#c7f0c7" if is_trained else "#eeeeee"
            )
        )
        ax.text(
            x + 0.04,
            y + 0.2,
            label,
            fontsize=7,
            va="center",
            family="monospace",
            color="#0b4d0b" if is_trained else "#666666",
        )
        x += w
    ax.set(
        xlim=(0, 12),
        ylim=(y - 0.1, 0.5),
        title=f"one conversation, {len(tokens)} tokens, {sum(trained)} in the loss (green)",
    )
    ax.axis("off")
    path = save_figure(fig, ctx.figure_path("c5_3_tokens.png"))

    shown = " ".join(f"[{t}]" if m else t for t, m in zip(tokens, trained, strict=True)).replace("\n", "\\n")
    ok = eot_trained and agree == len(examples) and not bad_eot_trained
    decides = Shown(
        "the same conversation and tokenizer, two templates: the end of turn is in the loss with one and "
        f"not the other; marker spans = derived spans on all {len(examples)} conversations"
    )
    measurements = (
        judged(
            "template_decides_loss",
            "end of turn trained with the demo template, not with a template whose markers close early",
            ok,
            "",
            rule=decides,
            seed=SEED_BEHAVIOUR,
            detail=f"demo template: {eot.token} trained = {eot_trained}; markers closing before it: "
            f"trained = {bad_eot_trained}",
        ),
        Measurement("tokens", "tokens in the conversation", len(tokens), "tokens", detail=shown[:400]),
        Measurement("trained_tokens", "tokens in the loss", sum(trained), "tokens"),
        Measurement(
            "derived_agree",
            "conversations where derived spans = template-marker spans",
            agree / len(examples),
            "",
            detail=f"{agree} of {len(examples)}",
        ),
    )
    explanation = (
        f"The demo tokenizer (byte-level BPE, {len(tok)} tokens, trained with `tokenizers` on local text) and "
        f"its ChatML template turn one {len(convo.messages)}-message conversation into {len(tokens)} tokens: "
        f"{rendered!r}. The {{% generation %}} markers around the assistant content and its {eot.token} make "
        f"transformers' assistant mask select {sum(trained)} of them (in brackets in the detail).\n\n"
        "Without markers expkit derives the same spans by rendering each turn as a prefix "
        f"(agreeing on {agree}/{len(examples)} conversations). A template whose markers close before "
        f"{eot.token}, common in the wild, leaves the stop token out of the loss: it is "
        f"{'trained' if bad_eot_trained else 'not trained'} there, and `expkit sft audit` fails on it."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
