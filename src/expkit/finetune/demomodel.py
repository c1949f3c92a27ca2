"""The demo model, built offline: a byte-level BPE tokenizer trained with ``tokenizers`` on local text,
a Qwen2-architecture model pre-trained for a short while on the CPU, a ChatML template with
``{% generation %}`` markers, all saved with ``save_pretrained`` and cached by a hash of the build.

The pre-training text is Python standard-library source, plain sentences of the synthetic tasks
(``What is 3 + 4? 7.``) and ChatML transcripts of them in which the assistant turn is NOT closed by
``<|im_end|>``: like a base checkpoint that has seen chat logs but not one template's end-of-turn
convention, it answers and then carries on with the next turn until SFT teaches it to stop. Like Qwen2.5 base
checkpoints its ``generation_config`` stops on ``<|endoftext|>`` while the chat template ends a turn with
``<|im_end|>``: the stop-token contract (``expkit.finetune.contract``) exists to catch exactly that. The
tokenizer's ``eos_token`` is ``<|endoftext|>`` as well (Qwen2.5 base), so transformers' own eos alignment does
not fix it either.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from expkit.errors import InputError, UsageError
from expkit.finetune.chatdata import SYSTEM_PROMPT, TASKS, plain_task_text

__all__ = [
    "CHATML_TEMPLATE",
    "END_OF_TURN",
    "DemoModel",
    "DemoModelSpec",
    "build_demo_model",
    "demo_model_spec",
    "ensure_demo_model",
    "expkit_cache_dir",
    "provide_demo_model",
]

END_OF_TURN = "<|im_end|>"
END_OF_TEXT = "<|endoftext|>"
SPECIAL_TOKENS = (END_OF_TEXT, "<|im_start|>", END_OF_TURN)

# ChatML as Qwen2.5 writes it, plus {% generation %} markers around the assistant content AND its
# <|im_end|>, so that transformers' assistant mask (and TRL's assistant_only_loss) trains the stop token.
CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['role'] == 'assistant' %}"
    "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}{{- '\\n' }}"
    "{%- else %}"
    "{{- message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# Standard-library modules whose source is the "web text" of the demo model (present in every CPython).
_STDLIB_FILES = (
    "textwrap.py",
    "string.py",
    "fractions.py",
    "csv.py",
    "shlex.py",
    "glob.py",
    "fnmatch.py",
    "calendar.py",
    "difflib.py",
    "heapq.py",
    "bisect.py",
    "colorsys.py",
)


@dataclass(frozen=True)
class DemoModelSpec:
    """Everything that decides the built model; its hash names the cache directory."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    seq_len: int
    batch_size: int
    pretrain_steps: int
    learning_rate: float
    stdlib_chars: int
    task_sentences: int
    transcript_share: float = 0.3
    seed: int = 0
    version: int = 3  # bump when the build code changes what it produces

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


def demo_model_spec(*, quick: bool) -> DemoModelSpec:
    """The two standard builds: ``quick`` (~0.1M parameters, seconds) and full (~1M, about a minute)."""
    if quick:
        return DemoModelSpec(
            vocab_size=512,
            hidden_size=64,
            num_layers=2,
            num_heads=4,
            num_kv_heads=2,
            intermediate_size=192,
            seq_len=64,
            batch_size=16,
            pretrain_steps=200,
            learning_rate=3e-3,
            stdlib_chars=120_000,
            task_sentences=6_000,
        )
    return DemoModelSpec(
        vocab_size=1024,
        hidden_size=128,
        num_layers=4,
        num_heads=4,
        num_kv_heads=2,
        intermediate_size=384,
        seq_len=96,
        batch_size=16,
        pretrain_steps=500,
        learning_rate=2e-3,
        stdlib_chars=300_000,
        task_sentences=20_000,
    )


@dataclass(frozen=True)
class DemoModel:
    """A built demo model directory and what it took."""

    path: Path
    spec: DemoModelSpec
    parameters: int
    pretrain_loss_first: float | None
    pretrain_loss_last: float | None
    build_s: float | None
    cached: bool


def expkit_cache_dir() -> Path:
    """``$EXPKIT_CACHE`` or ``~/.cache/expkit``."""
    return Path(os.environ.get("EXPKIT_CACHE") or Path.home() / ".cache" / "expkit")


def _corpus(spec: DemoModelSpec) -> list[str]:
    """Documents: stdlib source pieces and task sentences, shuffled with the spec's seed."""
    rng = random.Random(spec.seed)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    docs: list[str] = []
    budget = spec.stdlib_chars
    for name in _STDLIB_FILES:
        f = stdlib / name
        if not f.is_file() or budget <= 0:
            continue
        text = f.read_text(encoding="utf-8", errors="replace")[:budget]
        budget -= len(text)
        docs += [text[i : i + 2000] for i in range(0, len(text), 2000)]
    tasks = list(TASKS)
    # task sentences, grouped a few to a document
    n_plain = spec.task_sentences - int(spec.task_sentences * spec.transcript_share)
    sentences = [plain_task_text(rng.choice(tasks), rng) for _ in range(n_plain)]
    docs += [" ".join(sentences[i : i + 8]) for i in range(0, len(sentences), 8)]
    # chat transcripts whose assistant turns are NOT closed by <|im_end|> (a base model has seen chat logs,
    # not the end-of-turn convention of one template): after an answer it continues the conversation
    turns = []
    for _ in range(spec.task_sentences - n_plain):
        question, answer = plain_task_text(rng.choice(tasks), rng).rsplit(" ", 1)
        turns.append(f"<|im_start|>user\n{question}{END_OF_TURN}\n<|im_start|>assistant\n{answer[:-1]}\n")
    head = f"<|im_start|>system\n{SYSTEM_PROMPT}{END_OF_TURN}\n"
    docs += [head + "".join(turns[i : i + 3]) for i in range(0, len(turns), 3)]
    rng.shuffle(docs)
    return docs


def _train_tokenizer(docs: list[str], spec: DemoModelSpec):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    # digits one by one (as Qwen2 does), then GPT-2 style byte-level pieces
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(docs, trainer=trainer)
    from transformers import PreTrainedTokenizerFast

    # as Qwen2.5 base checkpoints: eos and pad are <|endoftext|>; the chat template ends turns with <|im_end|>
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=END_OF_TEXT,
        pad_token=END_OF_TEXT,
        bos_token=None,
        unk_token=None,
        model_max_length=4096,
    )
    hf.chat_template = CHATML_TEMPLATE
    return hf


def _pretrain(model, ids, spec: DemoModelSpec) -> tuple[float, float]:
    """Next-token pre-training on the token stream; returns (first, last) loss (mean of 10 steps)."""
    import torch

    gen = torch.Generator().manual_seed(spec.seed)
    data = torch.tensor(ids, dtype=torch.long)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate, weight_decay=0.01)
    warmup = max(1, spec.pretrain_steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.1, 1 - s / spec.pretrain_steps)
    )
    losses = []
    model.train()
    for _ in range(spec.pretrain_steps):
        starts = torch.randint(0, len(data) - spec.seq_len - 1, (spec.batch_size,), generator=gen)
        batch = torch.stack([data[s : s + spec.seq_len] for s in starts.tolist()])  # (B, T)
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    head = losses[:10]
    tail = losses[-10:]
    return sum(head) / len(head), sum(tail) / len(tail)


def build_demo_model(*, out: str | Path, spec: DemoModelSpec, num_threads: int | None = 1) -> DemoModel:
    """Train the tokenizer, pre-train the model and save both (plus the chat template) to ``out``.

    Args:
        out: the directory to write (created; existing files are overwritten).
        spec: the build, e.g. ``demo_model_spec(quick=True)``.
        num_threads: torch threads while pre-training (1: see ``torch_threads``; None: torch's default).

    Returns:
        A DemoModel; ``AutoModelForCausalLM.from_pretrained(out)`` and ``AutoTokenizer.from_pretrained(out)``
        load it like any local checkpoint.

    Example:
        >>> build_demo_model(out="demo", spec=demo_model_spec(quick=True)).parameters
        132160
    """
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    t0 = time.perf_counter()
    out = Path(out)
    torch.manual_seed(spec.seed)
    docs = _corpus(spec)
    tok = _train_tokenizer(docs, spec)
    eot_text = tok.convert_tokens_to_ids(END_OF_TEXT)
    ids: list[int] = []
    for doc_ids in tok(docs, add_special_tokens=False)["input_ids"]:
        ids += [*doc_ids, eot_text]
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        intermediate_size=spec.intermediate_size,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=eot_text,
        pad_token_id=eot_text,
        # transformers 5 takes rope_theta through **kwargs (into rope_parameters); 4.x (>= 4.46 supported) names it
        rope_theta=10000.0,
    )  # type: ignore[call-arg]  # see the comment above rope_theta
    model = Qwen2ForCausalLM(config)
    from expkit.hardware.threads import torch_threads  # imports torch inside the function

    with torch_threads(num_threads):
        first, last = _pretrain(model, ids, spec)
    model.eval()
    # like a base checkpoint: generation stops on <|endoftext|>, not on the chat end-of-turn token
    model.generation_config = GenerationConfig(eos_token_id=eot_text, pad_token_id=eot_text)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    n_params = sum(p.numel() for p in model.parameters())
    elapsed = time.perf_counter() - t0
    info = {
        "spec": asdict(spec),
        "parameters": n_params,
        "pretrain_loss_first": first,
        "pretrain_loss_last": last,
        "build_s": elapsed,
    }
    (out / "expkit_demo.json").write_text(json.dumps(info, indent=2))
    return DemoModel(
        path=out,
        spec=spec,
        parameters=n_params,
        pretrain_loss_first=first,
        pretrain_loss_last=last,
        build_s=elapsed,
        cached=False,
    )


def ensure_demo_model(
    *, quick: bool = False, spec: DemoModelSpec | None = None, cache_dir: str | Path | None = None
) -> DemoModel:
    """The cached demo model for ``spec`` (default: the quick or full build), built on first use.

    The cache directory is ``<cache>/demo-model/<hash of the spec>``; a build is written to a temporary
    directory and renamed, so a killed build never leaves a half model behind.

    Raises:
        UsageError: a cache directory that is not writable.
    """
    spec = spec or demo_model_spec(quick=quick)
    root = Path(cache_dir) if cache_dir is not None else expkit_cache_dir()
    final = root / "demo-model" / spec.digest()
    info_path = final / "expkit_demo.json"
    if info_path.is_file():
        info = json.loads(info_path.read_text())
        return DemoModel(
            path=final,
            spec=spec,
            parameters=info["parameters"],
            pretrain_loss_first=info["pretrain_loss_first"],
            pretrain_loss_last=info["pretrain_loss_last"],
            build_s=info["build_s"],
            cached=True,
        )
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"cannot create the cache directory {final.parent}: {exc}", hint="set EXPKIT_CACHE to a writable directory"
        ) from None
    tmp = final.parent / f".{final.name}.{os.getpid()}.tmp"
    built = build_demo_model(out=tmp, spec=spec)
    try:
        os.replace(tmp, final)
    except OSError:  # another process finished first: keep theirs
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return DemoModel(
        path=final,
        spec=spec,
        parameters=built.parameters,
        pretrain_loss_first=built.pretrain_loss_first,
        pretrain_loss_last=built.pretrain_loss_last,
        build_s=built.build_s,
        cached=False,
    )


def provide_demo_model(*, out: str | Path | None = None, quick: bool = False, rebuild: bool = False) -> DemoModel:
    """The demo model where the user wants it: the cached build (built on first use, or again with
    ``rebuild``), copied to ``out`` when given (``path`` then names ``out``).
    """
    import shutil
    from dataclasses import replace

    spec = demo_model_spec(quick=quick)
    if rebuild and out is not None:
        with _space_checked(Path(out)):
            return build_demo_model(out=out, spec=spec)
    if rebuild:
        shutil.rmtree(expkit_cache_dir() / "demo-model" / spec.digest(), ignore_errors=True)
    with _space_checked(expkit_cache_dir()):
        built = ensure_demo_model(quick=quick)
    if out is None:
        return built
    with _space_checked(Path(out)):
        shutil.copytree(built.path, out, dirs_exist_ok=True)
    return replace(built, path=Path(out))


_FULL_DISK = ("[Errno 28]", "[Errno 122]", "[Errno 27]", "No space left", "Disk quota", "File too large")


@contextmanager
def _space_checked(out: Path) -> Iterator[None]:
    """A write of the model under ``out`` that the disk refused (full, quota, ``ulimit -f``) as one line naming
    the path and the space left (issue 36: ``shutil.copytree`` gathers its ENOSPCs into a ``shutil.Error``
    without an errno, a traceback, exit 3). Other errors pass."""
    try:
        yield
    except Exception as exc:
        if not any(text in str(exc) for text in _FULL_DISK):
            raise
        import shutil

        probe = out
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        free = shutil.disk_usage(probe).free
        raise InputError(
            f"could not write the demo model: no space left on the device ({free / 1e6:.2f} MB free there; "
            "the quick model takes about 0.6 MB, the full one a few MB)",
            path=out,
            hint="free space, or give --out a folder on another disk",
        ) from None
