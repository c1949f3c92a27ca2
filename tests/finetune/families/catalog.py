"""The chat families the SFT label tests run over: TRL 1.16's templates (its stock templates and its
``*_training.jinja`` ones, whose ``{% generation %}`` markers give TRL's trained spans) and the templates in
``templates/`` here (families TRL does not ship, each naming its source), plus the three conversations each is
tried on, the per-family test tokenizer (a small BPE with the family's special tokens added) and the table that
``docs/finetune.md`` carries."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "templates"


def trl_template_dir() -> Path:
    import trl

    return Path(trl.__file__).parent / "chat_templates"


@dataclass(frozen=True)
class Family:
    """One chat family: the template a user has (``template``) and TRL's training template when TRL ships one."""

    name: str
    template: str
    trl_template: str | None
    source: str


def families() -> list[Family]:
    """TRL's 31 training families (the stock template where TRL ships it, else the training template with its
    markers removed) and the fixture families, sorted by name."""
    d = trl_template_dir()
    out = []
    for f in sorted(d.glob("*_training.jinja")):
        name = f.name.removesuffix("_training.jinja")
        stock = d / f"{name}.jinja"
        template = stock.read_text() if stock.is_file() else f.read_text()
        src = f"trl/chat_templates/{stock.name if stock.is_file() else f.name}"
        out.append(Family(name, template, f.read_text(), src))
    for f in sorted([*HERE.glob("*.jinja"), *HERE.glob("second_round/*.jinja")]):  # issue 35's second round too
        out.append(Family(f.stem, f.read_text(), None, f"tests/finetune/families/{f.relative_to(HERE.parent)}"))
    return sorted(out, key=lambda fam: fam.name)


def trl_training_templates() -> list[tuple[str, str]]:
    """(name, text) of TRL's ``*_training.jinja`` templates."""
    return [(f.name, f.read_text()) for f in sorted(trl_template_dir().glob("*_training.jinja"))]


def _text(value: str, blocks: bool) -> Any:
    return [{"type": "text", "text": value}] if blocks else value


def conversations(blocks: bool = False, json_args: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The one-turn, multi-turn (system + two turns) and tool-call conversations (content as text blocks for
    the multimodal templates that only read blocks; tool arguments as a JSON string for DeepSeek-V3's)."""
    t = lambda v: _text(v, blocks)  # noqa: E731
    args: Any = '{"city": "Paris"}' if json_args else {"city": "Paris"}
    call = {"type": "function", "id": "call00001", "function": {"name": "get_weather", "arguments": args}}
    return {
        "one-turn": [{"role": "user", "content": t("What is 2+3?")}, {"role": "assistant", "content": t("5")}],
        "multi-turn": [
            {"role": "system", "content": t("Be brief.")},
            {"role": "user", "content": t("What is 2+3?")},
            {"role": "assistant", "content": t("5")},
            {"role": "user", "content": t("And 4+4?")},
            {"role": "assistant", "content": t("8")},
        ],
        "tool call": [
            {"role": "user", "content": t("Weather in Paris?")},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": "get_weather", "tool_call_id": "call00001", "content": "sunny"},
            {"role": "assistant", "content": t("Sunny.")},
        ],
    }


_SPECIAL = re.compile(
    r"<\|[^<>\s]{1,40}?\|>|<\|[a-z_\"]{1,20}>|<[a-z_\"]{1,20}\|>|<\uff5c[^<>]{1,40}?\uff5c>|<[a-z_]{3,30}>|</s>|<s>"
    r"|\[/?INST\]|\[/?TOOL_[A-Z]+\]|\[gMASK\]|<sop>|<SPECIAL_\d{1,3}>|<seed:[a-z_]{2,20}>"  # Nemotron Nano v2, Seed-OSS
)


def special_tokens(texts: list[str]) -> list[str]:
    """The special-looking strings of a family's renders (role headers, end-of-turn tokens)."""
    return sorted({m.group(0) for text in texts for m in _SPECIAL.finditer(text)})


def build_tokenizer(template: str, texts: list[str], eos: str) -> Any:
    """A small byte-level BPE trained on the family's renders, with its special tokens added whole."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = special_tokens(texts)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(texts * 4, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, bos_token="<s>", pad_token="<pad>")
    fast.add_special_tokens({"additional_special_tokens": specials})
    fast.chat_template = template
    return fast


def render_any(template: str, messages: list[dict[str, Any]], **context: Any) -> str:
    """``render_template``, and with an empty ``tools`` list when the template needs one (Hermes 3 tool use
    iterates ``tools``; passing [] to every template would change Llama 3.2's, which tests ``tools is not none``)."""
    from expkit.finetune.conventions import render_template

    try:
        return render_template(template, messages, **context)
    except Exception:
        if "tools" in context:
            raise
        return render_template(template, messages, tools=[], **context)
