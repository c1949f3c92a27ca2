"""The CLI fuzz suite: every command family, driven in-process with generated hostile inputs.

Inputs a hostile (or unlucky) user gives: empty files, binary, non-UTF-8, a UTF-8 byte-order mark, one
huge line, deeply nested JSON, NaN/inf/negative/huge numbers as option values, a directory where a file
is expected, a path that does not exist or lies under a regular file, broken model directories.

Each case must end with exit 0, 1 or 2 (never 3, an internal error), print no traceback, stay under
``CASE_DEADLINE_S``, and with ``--json`` print one parseable envelope. Hypothesis runs derandomized (the
same cases on every run) with ``max_examples`` per family sized so the whole suite stays within ~90 s on
2 cores. The number of cases per family is printed at the end of the run (tests/cli/conftest.py).

Defects in other owners' files are not fixed here: ``KNOWN_DEFECTS`` recognises them by their argv and
outcome, the case is counted, and the family's test ends as xfail naming the owner's area. When a
known defect is fixed, its entry stops matching and the test passes; delete the entry then.

Exploring beyond CI's budget: ``EXPKIT_FUZZ_SCALE=4`` multiplies every family's cases, and
``EXPKIT_FUZZ_LOG=fuzz.jsonl`` logs every failing case (argv, problems, output tail) instead of stopping
at the first, e.g. ``EXPKIT_FUZZ_SCALE=4 EXPKIT_FUZZ_LOG=/tmp/f.jsonl pytest tests/cli/test_fuzz.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# A Python traceback as printed: its header at the start of a line (`expkit why` quotes the header in a hint).
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):$", re.MULTILINE)
CASE_DEADLINE_S = 20.0  # a case past this is a hang (the slowest legitimate case, 2 training steps, takes ~2 s)

# ---- hostile values -------------------------------------------------------------------------------

# Valid and hostile values interleaved: hypothesis draws early entries more often, and a case that passes
# every check must also run (exit 0 or 1) without a traceback.
NUMBERS = [
    "1",
    "nan",
    "2",
    "inf",
    "0.5",
    "-1",
    "0",
    "1e308",
    "-inf",
    "1e20",
    "9" * 30,
    "-0",
    "-1e308",
    "1e-7",
    "0x10",
    "",
    # issue 36's numeric edges: 0.5 + x / 2 rounds to 1.0, the smallest subnormal, past 64 bits, past float64
    "0.9999999999999999",
    "5e-324",
    str(2**64 + 1),
    "1" + "0" * 400,
]
STRINGS = [
    "",
    " ",
    "../../../etc/passwd",
    "x" * 5000,
    "é\u202eü",
    "a\x7fb\x9b31m\udcff",  # issue 35: DEL, an 8-bit CSI, a lone surrogate (an undecodable file name byte)
    ":",
    "a:b",
    "-x",
    "x=y",
    "KEY=",
    "=1",
    "nan",
    "a" * 300 + ":" + "b" * 300,
    ";",
    ",,,",
    "1,2,x",
]
FILE_KINDS = [
    "valid_jsonl",
    "empty",
    "binary",
    "valid_csv",
    "latin1",
    "bom_jsonl",
    "bom_csv",
    "huge_line",
    "nested_json",
    "nan_jsonl",
    "json_scalar",
    "traceback",
    "directory",
    "missing",
    "under_a_file",
]

_GOOD_ROWS = [
    {
        "model": m,
        "item": i,
        "score": (i * 7 + len(m)) % 2,
        "step": i,
        "loss": 1.0 / (i + 1),
        "seed": len(m) * (m == "b"),
        "text": "hello world",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
    }
    for m in ("a", "b")
    for i in range(6)
]
_TRACEBACK_TEXT = (
    'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    x = y @ z\n'
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 4x8)\n"
)


def make_file(kind: str, where: Path, suffix: str = ".jsonl") -> str:
    """A path of the given hostile kind inside ``where`` (created as needed)."""
    p = where / f"in-{kind}{suffix}"
    jsonl = "".join(json.dumps(r) + "\n" for r in _GOOD_ROWS)
    csv = "model,item,score,step,loss,seed\n" + "".join(
        f"{r['model']},{r['item']},{r['score']},{r['step']},{r['loss']},{r['seed']}\n" for r in _GOOD_ROWS
    )
    if kind == "empty":
        p.write_bytes(b"")
    elif kind == "binary":
        p.write_bytes(bytes(range(256)) * 8)
    elif kind == "latin1":
        p.write_bytes(jsonl.replace("hello", "h\u00e9llo").encode("latin-1"))
    elif kind == "bom_jsonl":
        p.write_bytes(b"\xef\xbb\xbf" + jsonl.encode())
    elif kind == "bom_csv":
        p.write_bytes(b"\xef\xbb\xbf" + csv.encode())
    elif kind == "huge_line":
        p.write_text(json.dumps({"model": "a", "item": 0, "score": 1, "text": "x" * 1_000_000}) + "\n")
    elif kind == "nested_json":
        p.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    elif kind == "nan_jsonl":
        p.write_text(
            "".join(
                json.dumps({**r, "score": v, "loss": v}) + "\n"
                for r, v in zip(_GOOD_ROWS, [float("nan"), float("inf"), -1e308, 1e308] * 3, strict=True)
            )
        )
    elif kind == "json_scalar":
        p.write_text('3\n"x"\n[1, 2]\nnull\n')
    elif kind == "chrome_trace":  # what torch.profiler's export_chrome_trace writes, in small
        events = [
            {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}
            for name, ts, dur in (("aten::addmm", 0, 70), ("aten::copy_", 75, 10), ("aten::add_", 90, 5))
        ]
        p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    elif kind == "traceback":
        p.write_text(_TRACEBACK_TEXT)
    elif kind == "valid_jsonl":
        p.write_text(jsonl)
    elif kind == "valid_csv":
        p = p.with_suffix(".csv")
        p.write_text(csv)
    elif kind == "dev_zero":  # an input that never ends (issue 21): stopped by data.sources' bounds
        return "/dev/zero"
    elif kind == "dev_urandom":  # never ends, short lines, now and then a number: stopped as "not JSONL"
        return "/dev/urandom"
    elif kind == "two_score_columns":  # issue 21: the last of two same-named columns won silently
        p = p.with_suffix(".csv")
        p.write_text("model,item,score,score\n" + "".join(f"{m},{i},1,0\n" for m in "ab" for i in range(4)))
    elif kind == "big_ids":  # issue 21: ids past 2**64 collapsed into one float and were refused as duplicates
        p.write_text("".join(json.dumps({**r, "item": 2**70 + r["item"]}) + "\n" for r in _GOOD_ROWS))
    elif kind == "same_difference":  # issue 21: every item differs by -1: "no difference observed"
        p.write_text(
            "".join(json.dumps({"model": m, "item": i, "score": int(m == "a")}) + "\n" for m in "ab" for i in range(2))
        )
    elif kind == "partial_overlap":  # issue 21: lm-eval --limit, errored samples: pair on the shared items
        p.write_text("".join(json.dumps(r) + "\n" for r in _GOOD_ROWS if r["model"] == "a" or r["item"] > 1))
    elif kind == "wide_csv":  # round five: 100,000 columns, the duplicate-column check was quadratic (minutes)
        p = p.with_suffix(".csv")
        names = ["model", "item", "score", "x", "x"] + [f"c{i}" for i in range(100_000)]
        p.write_text(",".join(names) + "\n" + ",".join(["a", "1", "1"] + ["0"] * (len(names) - 3)) + "\n")
    elif kind == "directory":
        p.mkdir(exist_ok=True)
        (p / "inner.jsonl").write_text(jsonl)
    elif kind == "missing":
        pass
    elif kind == "under_a_file":
        blocker = where / "a-regular-file"
        blocker.write_text("x")
        p = blocker / "child.jsonl"
    else:  # pragma: no cover - a typo in a template
        raise ValueError(kind)
    return str(p)


def make_model_dir(kind: str, where: Path) -> str:
    """A model directory: the quick demo model, or a copy with one part broken, or not a directory."""
    if kind in ("missing", "under_a_file", "empty", "binary"):
        return make_file(kind, where, suffix="")
    from expkit.finetune.demomodel import ensure_demo_model

    demo = ensure_demo_model(quick=True).path
    if kind == "demo":
        return str(demo)
    d = where / f"model-{kind}"
    shutil.copytree(demo, d)
    cfg = json.loads((d / "config.json").read_text())
    if kind == "bad_tokenizer":
        (d / "tokenizer.json").write_bytes(os.urandom(200))
    elif kind == "bad_template":
        (d / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content ")
    elif kind == "random_weights":
        (d / "model.safetensors").write_bytes(os.urandom(2000))
    elif kind == "heads":
        (d / "config.json").write_text(json.dumps({**cfg, "num_attention_heads": 7}))
    elif kind == "huge_config":
        (d / "config.json").write_text(
            json.dumps(
                {
                    **cfg,
                    "hidden_size": 10**12,
                    "num_hidden_layers": 10**9,
                    "vocab_size": 10**12,
                    "intermediate_size": 10**12,
                }
            )
        )
    elif kind == "config_list":
        (d / "config.json").write_text("[]")
    elif kind == "no_tokenizer":
        (d / "tokenizer.json").unlink()
    else:  # pragma: no cover
        raise ValueError(kind)
    return str(d)


MODEL_KINDS = [
    "demo",
    "bad_tokenizer",
    "bad_template",
    "random_weights",
    "heads",
    "huge_config",
    "config_list",
    "no_tokenizer",
    "missing",
    "under_a_file",
    "empty",
    "binary",
]

# ---- templates: one per command family; each draws an argv ----------------------------------------


@dataclass
class Draw:
    """What a template needs: hypothesis's draw and a fresh directory for this case."""

    draw: Callable
    where: Path
    json_flag: bool = False
    extra: dict = field(default_factory=dict)

    def num(self) -> str:
        return self.draw(st.sampled_from(NUMBERS))

    def text(self) -> str:
        return self.draw(st.sampled_from(STRINGS))

    def file(self, suffix: str = ".jsonl", kinds: list[str] | None = None) -> str:
        return make_file(self.draw(st.sampled_from(kinds or FILE_KINDS)), self.where, suffix)

    def out_path(self, suffix: str = ".jsonl") -> str:
        """Where a command is told to write: a fresh path, a folder, a path under a regular file, a name
        too long for the file system, a path in folders that do not exist yet."""
        kind = self.draw(st.sampled_from(["fresh", "directory", "under_a_file", "too_long", "deep"]))
        if kind == "fresh":
            return str(self.where / f"out{suffix}")
        if kind == "directory":
            return make_file("directory", self.where, "")
        if kind == "under_a_file":
            return make_file("under_a_file", self.where, suffix)
        if kind == "too_long":
            return str(self.where / ("n" * 300 + suffix))
        return str(self.where / "a" / "b" / f"out{suffix}")

    def maybe(self, *args: str) -> list[str]:
        return list(args) if self.draw(st.booleans()) else []

    def json(self) -> list[str]:
        self.json_flag = self.draw(st.booleans())
        return ["--json"] if self.json_flag else []


def t_stats(d: Draw) -> list[str]:
    which = d.draw(st.sampled_from(["ci", "power", "table"]))
    if which == "ci":
        return [
            "stats",
            "ci",
            "--correct",
            d.num(),
            "--n",
            d.num(),
            *d.maybe("--level", d.num()),
            *d.maybe("--method", d.draw(st.sampled_from(["wald", "wilson", "exact", d.text()]))),
            *d.json(),
        ]
    if which == "power":
        return [
            "stats",
            "power",
            "--baseline",
            d.num(),
            "--delta",
            d.num(),
            *d.maybe("--paired-corr", d.num()),
            *d.maybe("--power", d.num()),
            *d.maybe("--alpha", d.num()),
            *d.json(),
        ]
    rows = [*FILE_KINDS, "two_score_columns", "big_ids", "same_difference", "partial_overlap"]
    if d.draw(st.booleans()):  # labelled runs (issue 21): NAME=PATH[:SELECTOR], the selector a model of the file
        first = d.file(d.draw(st.sampled_from([".jsonl", ".csv"])), kinds=rows)
        sources = [
            "--label",
            f"{d.text()}={first}:a",
            "--label",
            f"b={d.draw(st.sampled_from([first, first + ':b', first + ':' + d.text(), d.text()]))}",
        ]
    else:
        sources = [d.file(d.draw(st.sampled_from([".jsonl", ".csv", ".json", ""])), kinds=rows)]
    return [
        "stats",
        "table",
        *sources,
        *d.maybe("--unpaired"),
        *d.maybe("--level", d.num()),
        *d.maybe("--format", d.draw(st.sampled_from(["json", "html", d.text()]))),
        *d.json(),
    ]


def t_data(d: Draw) -> list[str]:
    which = d.draw(st.sampled_from(["stats", "validate", "head", "sample"]))
    args = ["data", which, d.file(kinds=[*FILE_KINDS, "dev_zero", "dev_urandom"])]
    if which == "validate":
        args += ["--schema", d.file(".json")]
    if which in ("head", "sample"):
        args += d.maybe("-n", d.num())
    if which == "stats":
        args += d.maybe("--field", d.text())
    return args + d.maybe("--on-error", "skip") + d.json()


def t_why(d: Draw) -> list[str]:
    return ["why", d.file(".txt", kinds=[*FILE_KINDS, "dev_zero"]), *d.json()]


def t_plot(d: Draw) -> list[str]:
    out = d.out_path(d.draw(st.sampled_from([".png", ".svg", ".xyz", ""])))
    return [
        "plot",
        "curves",
        d.file(d.draw(st.sampled_from([".jsonl", ".csv"]))),
        "--out",
        out,
        *d.maybe("--ema", d.num()),
        *d.maybe("--x", d.text()),
        *d.json(),
    ]


def t_check(d: Draw) -> list[str]:
    shape = d.draw(st.sampled_from(["4,8", "2,16,8", d.text(), d.num(), "100000000000,100000000000", "0,4", "1," * 30]))
    if d.draw(st.booleans()):
        dtype = d.maybe("--dtype", d.draw(st.sampled_from(["float64", d.text()])))
        return ["check", "attention", "--shape", shape, *dtype, *d.maybe("--seed", d.num()), *d.json()]
    softmax = "expkit.check.reference:softmax"
    fn, backend, ref = d.draw(
        st.sampled_from(
            [
                ("torch:tanh", "torch", "numpy:tanh"),
                (softmax, "numpy", softmax),
                (d.text(), "numpy", "numpy:tanh"),
                ("os:getcwd", "numpy", "numpy:tanh"),
                ("numpy:tanh", d.text(), ":x"),
            ]
        )
    )
    return [
        "check",
        "op",
        fn,
        "--reference",
        ref,
        "--reference-backend",
        "numpy",
        "--backend",
        backend,
        "--shape",
        shape,
        *d.maybe("--rtol", d.num()),
        *d.maybe("--atol", d.num()),
        *d.maybe("--dtype", d.draw(st.sampled_from(["float64", "bfloat16", d.text()]))),
        *d.json(),
    ]


_TINY = [
    "--config",
    "n_layer=1",
    "--config",
    "n_embd=16",
    "--config",
    "n_head=2",
    "--config",
    "block_size=16",
    "--config",
    "seq_len=16",
    "--config",
    "batch_size=2",
    "--config",
    "max_steps=2",
    "--config",
    "warmup_steps=1",
    "--config",
    "eval_windows=2",
    "--config",
    "num_threads=1",
]  # 1 thread: no OpenMP spin-waits on a busy machine
_TRAIN_KEYS = [
    "lr_max",
    "lr_min",
    "dropout",
    "grad_clip",
    "weight_decay",
    "warmup_steps",
    "seq_len",
    "n_head",
    "vocab_size",
    "max_steps",
    "eval_windows",
    "learning_rate",
    "check_grads",
]


def t_train(d: Draw) -> list[str]:
    corpus = d.file(".txt", kinds=[*FILE_KINDS, "valid_jsonl", "valid_jsonl"])
    args = ["train", "charlm", "--corpus", corpus, "--store", str(d.where / "runs"), *_TINY]
    for _ in range(d.draw(st.integers(0, 2))):
        args += ["--config", f"{d.draw(st.sampled_from(_TRAIN_KEYS))}={d.draw(st.sampled_from(NUMBERS + STRINGS[:4]))}"]
    return (
        args
        + d.maybe("--minutes", d.num())
        + d.maybe("--seed", d.num())
        + d.maybe("--resume", d.file("", kinds=["directory", "missing", "binary", "empty"]))
        + d.json()
    )


def t_mem(d: Draw) -> list[str]:
    model = d.draw(
        st.sampled_from(["qwen2.5-0.5b", "demo", "huge_config", "heads", "config_list", "missing", "binary", "text"])
    )
    if model == "text":
        model_arg = d.text()
    elif model == "qwen2.5-0.5b":
        model_arg = model
    else:
        model_arg = make_model_dir(model, d.where)
    return [
        "mem",
        model_arg,
        *d.maybe("--seq", d.num()),
        *d.maybe("--batch", d.num()),
        *d.maybe("--gpus", d.num()),
        *d.maybe("--lora-r", d.num()),
        *d.maybe("--oom", d.file(".txt")),
        *d.json(),
    ]


def t_roofline(d: Draw) -> list[str]:
    if d.draw(st.integers(0, 5)) == 0:
        return ["roofline", "gpus", *d.json()]
    model = d.draw(st.sampled_from(["qwen2.5-0.5b", "huge_config", "config_list", "missing", "text"]))
    model_arg = model if model == "qwen2.5-0.5b" else (d.text() if model == "text" else make_model_dir(model, d.where))
    return [
        "roofline",
        "--gpu",
        d.draw(st.sampled_from(["H100", "cpu-none", d.text()])),
        "--model",
        model_arg,
        *d.maybe("--batch", d.num()),
        *d.maybe("--context", d.num()),
        *d.maybe("--phase", d.draw(st.sampled_from(["decode", "prefill", "train", d.text()]))),
        *d.maybe("--figure", d.out_path(d.draw(st.sampled_from([".png", ".xyz", ""])))),
        *d.json(),
    ]


def t_profile(d: Draw) -> list[str]:
    trace = d.file(d.draw(st.sampled_from([".json", ".json.gz", ".py", ".txt"])), kinds=["chrome_trace", *FILE_KINDS])
    return ["profile", trace, *d.maybe("--top", d.num()), *d.json()]


def t_sft(d: Draw) -> list[str]:
    which = d.draw(st.sampled_from(["audit", "check-stop", "params", "data", "demo-model"]))
    if which == "demo-model":  # the quick build is cached: this copies it
        return ["sft", "demo-model", "--quick", "--out", d.out_path(""), *d.json()]
    if which == "data":
        return [
            "sft",
            "data",
            "--out",
            d.out_path(),
            "-n",
            d.draw(st.sampled_from(["1", "3", "0", "-1", "9" * 30, "1e20"])),
            *d.maybe("--tasks", d.draw(st.sampled_from(["add", "add,reverse", d.text()]))),
            *d.json(),
        ]
    model = make_model_dir(d.draw(st.sampled_from(MODEL_KINDS)), d.where)
    if which == "params":
        return ["sft", "params", model, *d.maybe("--lora-r", d.num()), *d.json()]
    data = _chat_or_hostile(d)
    if which == "audit":
        return [
            "sft",
            "audit",
            "--model",
            model,
            "--data",
            data,
            *d.maybe("--show", d.num()),
            *d.maybe("--html", d.out_path(".html")),
            *d.maybe("--max-length", d.num()),
            *d.maybe("--loss", d.text()),
            *d.json(),
        ]
    return [
        "sft",
        "check-stop",
        "--model",
        model,
        "--data",
        data,
        "-n",
        d.draw(st.sampled_from(["1", "2", "0", "-1"])),
        "--max-new-tokens",
        d.draw(st.sampled_from(["1", "2", "0", "-1", "9" * 30])),
        *d.maybe("--min-stop-rate", d.num()),
        *d.maybe("--threads", d.num()),
        *d.json(),
    ]


_ODD_CHAT_LINES = [
    {"messages": "x"},
    {"messages": []},
    {"messages": [1]},
    {"messages": [{"role": 5, "content": "a"}]},
    {"messages": [{"role": "assistant", "content": "x"}]},
    {"messages": [{"role": "user", "content": ["a"]}, {"role": "assistant", "content": "x"}]},
    {"messages": [{"role": "user", "content": "\ud800"}, {"role": "assistant", "content": "x"}]},
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<|im_end|><|im_start|>"}]},
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}] * 300},
    {"prompt": 5, "completion": "x"},
    {"prompt": "", "completion": "x"},
    [1],
    None,
]


def _chat_or_hostile(d: Draw) -> str:
    kind = d.draw(st.sampled_from(["chat", "odd_chat", "file"]))
    if kind == "odd_chat":
        p = d.where / "odd.jsonl"
        p.write_text(json.dumps(d.draw(st.sampled_from(_ODD_CHAT_LINES))) + "\n")
        return str(p)
    if kind == "chat":
        from expkit.finetune.chatdata import generate_chat_examples, write_chat_jsonl

        return str(write_chat_jsonl(generate_chat_examples(n=2, seed=0), d.where / "chat.jsonl"))
    return d.file()


def t_runs(d: Draw) -> list[str]:
    store = d.draw(
        st.sampled_from(
            [
                str(d.where / "store"),
                make_file("binary", d.where, ""),
                make_file("directory", d.where, ""),
                make_file("under_a_file", d.where, ""),
            ]
        )
    )
    which = d.draw(st.sampled_from(["ls", "show", "diff", "export", "exec"]))
    if which == "ls":
        return ["runs", "ls", "--store", store, *d.maybe("--limit", d.num()), *d.maybe("--where", d.text()), *d.json()]
    if which == "show":
        return ["runs", "show", d.text() or "x", "--store", store, *d.json()]
    if which == "diff":
        return ["runs", "diff", d.text() or "x", d.text() or "y", "--store", store, *d.json()]
    if which == "export":
        return ["runs", "export", "--tensorboard", d.out_path(""), "--store", store, *d.json()]
    return [
        "runs",
        "exec",
        "--store",
        store,
        *d.maybe("--seed", d.num()),
        *d.maybe("--name", d.text()),
        *d.json(),
        "--",
        "python",
        "-c",
        "pass",
    ]


def t_labs(d: Draw) -> list[str]:
    if d.draw(st.booleans()):
        return ["labs", "list", *d.json()]
    bad_id = "Z" + d.text()  # never a real lab id: a real one would run the lab
    return ["labs", "run", bad_id, "--out", d.out_path(""), *d.maybe("--seed", d.num()), *d.json()]


def t_sweep(d: Draw) -> list[str]:
    return [
        "sweep",
        "--grid",
        d.draw(st.sampled_from(["a=1", d.text(), "=", "a=", "a=1,2,3,4,5,6,7,8,9,10"])),
        "--seeds",
        d.draw(st.sampled_from(["1", "0", "-1", "9" * 30, "nan"])),
        "--store",
        str(d.where / "store"),
        *d.maybe("--max-parallel", d.num()),
        *d.maybe("--cpus-per-trial", d.num()),
        *d.json(),
        "--",
        "python",
        "-c",
        "pass",
    ]


def t_doctor(d: Draw) -> list[str]:
    # a fuzzed file run as the program (python fails on most of them: doctor reports the exit code)
    program = [sys.executable, d.file(".py")] if d.draw(st.booleans()) else []
    return ["doctor", *d.maybe("--steps", d.num()), *d.maybe("--strict"), *d.json(), "--", *program]


def t_compare(d: Draw) -> list[str]:
    return [
        "compare",
        d.text() or "a",
        d.text() or "b",
        "--store",
        d.draw(st.sampled_from([str(d.where / "store"), make_file("binary", d.where, "")])),
        *d.maybe("--ema", d.num()),
        *d.maybe("--level", d.num()),
        *d.json(),
    ]


_HELD_PORT: list[socket.socket] = []


def _held_port() -> str:
    """A loopback port this process listens on (opened once): a fuzzed ``expkit ui`` is either refused before
    it binds or fails to bind (exit 2), and never starts serving."""
    if not _HELD_PORT:
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        held.listen()
        _HELD_PORT.append(held)
    return str(_HELD_PORT[0].getsockname()[1])


def _not_an_address(text: str) -> str:
    """``text``, unless it is an IP literal (which could bind a free port and serve): then a name."""
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return text or "h"
    return "not-an-address"


def t_ui(d: Draw) -> list[str]:
    # ports are the held one or invalid (never 0 or a free one); hosts are loopback, any, or not an address
    port = d.draw(st.sampled_from([_held_port(), "-1", "65536", "http"]))
    host = d.draw(st.sampled_from(["127.0.0.1", "localhost", "0.0.0.0", _not_an_address(d.text())]))
    return [
        "ui",
        "--store",
        d.draw(st.sampled_from([str(d.where / "store"), make_file("binary", d.where, "")])),
        "--port",
        port,
        "--host",
        host,
        *d.maybe("--expose"),
        *d.maybe("--report", d.out_path("")),
        *d.maybe("--evals", d.file()),
    ]


# family -> (template, max_examples). Cheap families get more cases; each case of train/sft/runs exec
# starts real work (2 training steps, a model load, a subprocess).
FAMILIES: dict[str, tuple[Callable[[Draw], list[str]], int]] = {
    "stats": (t_stats, 60),
    "data": (t_data, 60),
    "why": (t_why, 20),
    "plot": (t_plot, 30),
    "check": (t_check, 50),
    "train": (t_train, 12),
    "mem": (t_mem, 30),
    "roofline": (t_roofline, 30),
    "profile": (t_profile, 25),
    "sft": (t_sft, 30),
    "runs": (t_runs, 30),
    "labs": (t_labs, 15),
    "sweep": (t_sweep, 10),
    "compare": (t_compare, 15),
    "doctor": (t_doctor, 6),
    "ui": (t_ui, 15),
}

# ---- known defects in other owners' files (issue 15): (family, why + owner, predicate on argv and outcome) --


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None
    problems: tuple[str, ...]
    output: str


# (family, why, matcher) for a defect found and not yet fixed: its cases count as xfail naming the owner.
# Empty: the last one (H6, `sweep --seeds 10**30` an OverflowError) is fixed and has a regression test.
KNOWN_DEFECTS: list[tuple[str, str, Callable[[list[str], Outcome], bool]]] = []


def _known(family: str, argv: list[str], outcome: Outcome) -> str | None:
    for fam, why, matches in KNOWN_DEFECTS:
        if fam == family and matches(argv, outcome):
            return why
    return None


# ---- running one case ---------------------------------------------------------------------------------


class _CaseTimeout(BaseException):
    """Raised by the alarm inside a hung case; a BaseException so no ``except Exception`` swallows it."""


@contextmanager
def _memory_cap(extra_bytes: int):
    """At most ``extra_bytes`` more address space while fuzzing: a case that tries to allocate a huge
    input gets a MemoryError (reported as its traceback) instead of waking the OOM killer on a shared
    machine. The soft limit is restored afterwards."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = used + extra_bytes if hard == resource.RLIM_INFINITY else min(hard, used + extra_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@contextmanager
def _deadline(seconds: float):
    def fire(signum, frame):
        raise _CaseTimeout

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_case(argv: list[str], *, json_flag: bool) -> Outcome:
    from typer.testing import CliRunner

    from expkit.cli.app import app

    t0 = time.monotonic()
    try:
        with _deadline(CASE_DEADLINE_S):
            res = CliRunner().invoke(app, argv)
    except _CaseTimeout:
        return Outcome(None, (f"hang: no answer in {CASE_DEADLINE_S:.0f} s",), "")
    elapsed = time.monotonic() - t0
    out = res.stdout + res.stderr
    problems = []
    if res.exit_code not in (0, 1, 2):
        problems.append(f"exit {res.exit_code}")
    if _TRACEBACK.search(out):
        problems.append("traceback")
    if res.exit_code == 2 and ("╭" in res.stderr or "Try '" in res.stderr):  # issue 21: click's usage box
        problems.append("usage error not one line (click's usage box)")
    if elapsed > CASE_DEADLINE_S:
        problems.append(f"slow: {elapsed:.1f} s")
    if json_flag and res.exit_code in (0, 1, 2):
        try:
            env = json.loads(res.stdout, strict=True)
            orjson.loads(res.stdout.encode("utf-8"))  # issue 35: strict for every parser, lone surrogates too
            if not isinstance(env, dict) or "command" not in env or not ({"result", "error"} & set(env)):
                problems.append("--json: not the {command, version, result|error} envelope")
            if any(0x7F <= ord(c) <= 0x9F for c in res.stdout):
                problems.append("--json: DEL or a C1 control written raw")
        except (ValueError, UnicodeEncodeError):
            problems.append("--json: stdout is not one strict JSON document")
    return Outcome(res.exit_code, tuple(problems), out)


def _fuzz(family: str, fuzz_tally, monkeypatch, tmp_path) -> None:
    template, n = FAMILIES[family]
    n = max(1, round(n * float(os.environ.get("EXPKIT_FUZZ_SCALE", "1"))))  # >1 to explore beyond CI's budget
    monkeypatch.chdir(tmp_path)  # defaults such as ./runs and profile_trace.json land here
    monkeypatch.setenv("EXPKIT_STORE", str(tmp_path / "default-store"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    known: dict[str, list[str]] = {}
    t_family = time.monotonic()

    @settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def case(data) -> None:
        with tempfile.TemporaryDirectory(dir=tmp_path) as where:
            d = Draw(draw=data.draw, where=Path(where))
            argv = template(d)
            fuzz_tally["cases"][family] += 1
            outcome = run_case(argv, json_flag=d.json_flag)
            fuzz_tally["exits"][f"{family} {outcome.exit_code}"] += 1
            if not outcome.problems:
                return
            why = _known(family, argv, outcome)
            if why is not None:
                fuzz_tally["known"][family] += 1
                known.setdefault(why, []).append(" ".join(a[:60] for a in argv)[:300])
                return
            tail = "\n".join(outcome.output.strip().splitlines()[-6:])
            if os.environ.get("EXPKIT_FUZZ_LOG"):  # exploring: log every failing case, stop at none
                with open(os.environ["EXPKIT_FUZZ_LOG"], "a", encoding="utf-8") as log:
                    log.write(
                        json.dumps(
                            {
                                "family": family,
                                "argv": [a[:100] for a in argv],
                                "problems": outcome.problems,
                                "exit": outcome.exit_code,
                                "tail": tail[-1500:],
                            }
                        )
                        + "\n"
                    )
                return
            raise AssertionError(
                f"expkit {' '.join(a[:80] for a in argv)}\n-> {', '.join(outcome.problems)} "
                f"(exit {outcome.exit_code})\n{tail}"
            )

    # torch and transformers are imported before the cap (their import reserves address space), and the
    # quick demo model is built (a fresh clone has no cache) before any case's deadline starts
    import importlib

    for heavy in ("torch", "transformers"):
        importlib.import_module(heavy)
    if family in ("sft", "mem"):
        from expkit.finetune.demomodel import ensure_demo_model

        ensure_demo_model(quick=True)

    try:
        with _memory_cap(8 * 2**30):
            case()
    finally:
        fuzz_tally["seconds"][family] += time.monotonic() - t_family
    if known:
        pytest.xfail(
            "known defects (owner's area): "
            + "; ".join(f"{why} [{len(argvs)} cases, e.g. expkit {argvs[0]}]" for why, argvs in known.items())
        )


@pytest.mark.parametrize("family", list(FAMILIES))
def test_fuzz_command_family(family, fuzz_tally, monkeypatch, tmp_path):
    _fuzz(family, fuzz_tally, monkeypatch, tmp_path)


# Readers that skip or collect bad lines, given a source that never ends and is not JSONL (round five: each read
# /dev/urandom until killed; every line was a skipped or collected error, and a line now and then a number).
ENDLESS_READERS = [
    [*cmd, path, *tail]
    for path in ("/dev/urandom",)
    for cmd, tail in (
        (["data", "stats"], ["--on-error", "skip"]),
        (["data", "head"], ["--on-error", "skip", "-n", "5"]),
        (["data", "sample"], ["--on-error", "skip"]),
        (["data", "validate"], []),
        (["data", "validate"], ["--schema", "{schema}"]),
    )
]


@pytest.mark.parametrize("argv", ENDLESS_READERS, ids=lambda a: " ".join(a[:2] + a[3:5]))
def test_endless_binary_sources_end_in_one_line(argv, tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object"}')
    outcome = run_case([a.replace("{schema}", str(schema)) for a in argv], json_flag=False)
    assert outcome.exit_code == 2 and not outcome.problems, outcome
    assert "not a JSONL file" in outcome.output


# Outputs that exist and are not regular files (round five: `sft data --out /dev/null`, run as root, renamed its
# temporary file over /dev/null and left a regular file there; a FIFO and a symlink loop were replaced too).
# Each writer x each kind: exit 2 in one line, and the target is what it was. The device is a fresh node in
# tmp_path (root only), never the machine's /dev/null.
def _special_target(kind: str, path: Path) -> bool:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink_loop":
        path.symlink_to(path)
    elif kind == "folder":
        path.mkdir()
    else:  # a character device like /dev/null (major 1, minor 3)
        try:
            os.mknod(path, 0o666 | __import__("stat").S_IFCHR, os.makedev(1, 3))
        except OSError:
            return False
    return True


OUTPUT_WRITERS = {
    "sft data": lambda out: ["sft", "data", "--out", out, "-n", "2"],
    "plot curves": lambda out: ["plot", "curves", "{metrics}", "--out", out],
    "stats leaderboard --plot": lambda out: ["stats", "leaderboard", "{items}", "--plot", out],
    # torch renames its trace into place: a FIFO was replaced by the trace (refused now before the script runs)
    "profile --out": lambda out: ["profile", "--out", out, "--", sys.executable, "{script}"],
    # a FIFO blocked the write (a hang): refused like the others
    "sft audit --html": lambda out: ["sft", "audit", "--model", "{model}", "--data", "{chat}", "--html", out],
}


@pytest.mark.parametrize("kind", ["fifo", "symlink_loop", "folder", "char_device"])
def test_outputs_that_are_not_regular_files_are_refused_and_kept(kind, tmp_path):
    metrics, items = tmp_path / "m.jsonl", tmp_path / "items.jsonl"
    metrics.write_text("".join(json.dumps({"step": i, "loss": 1 / (i + 1)}) + "\n" for i in range(5)))
    items.write_text("".join(json.dumps(r) + "\n" for r in _GOOD_ROWS))
    script = tmp_path / "ops.py"
    script.write_text("import torch\nx = torch.randn(8, 8)\nprint((x @ x).sum().item())\n")
    from expkit.finetune.chatdata import generate_chat_examples, write_chat_jsonl
    from expkit.finetune.demomodel import ensure_demo_model

    model = ensure_demo_model(quick=True).path
    chat = write_chat_jsonl(generate_chat_examples(n=2, seed=0), tmp_path / "chat.jsonl")
    for writer, argv in OUTPUT_WRITERS.items():
        target = tmp_path / f"{writer.replace(' ', '_').replace('-', '')}-{kind}.png"
        if not _special_target(kind, target):
            pytest.skip("mknod needs root")
        before = os.lstat(target).st_mode
        fields = {"metrics": metrics, "items": items, "script": script, "model": model, "chat": chat}
        args = [a.format(**fields) for a in argv(str(target))]
        outcome = run_case(args, json_flag=False)
        assert outcome.exit_code == 2 and not outcome.problems, (writer, outcome)
        assert os.lstat(target).st_mode == before, f"{writer} replaced the {kind}"


FIGURE_WRITERS = {
    "plot curves": lambda out: ["plot", "curves", "{metrics}", "--out", out],
    "stats leaderboard --plot": lambda out: ["stats", "leaderboard", "{items}", "--plot", out],
    "roofline --figure": lambda out: ["roofline", "--gpu", "H100", "--model", "qwen2.5-0.5b", "--figure", out],
}


@pytest.mark.parametrize("suffix", [".jsonl", ".xyz", ".PNG.txt"])
def test_figures_named_with_a_suffix_no_format_has_are_one_line(suffix, tmp_path):
    # round five: `stats leaderboard --plot out.jsonl` was matplotlib's ValueError, exit 3
    metrics, items = tmp_path / "m.jsonl", tmp_path / "items.jsonl"
    metrics.write_text("".join(json.dumps({"step": i, "loss": 1 / (i + 1)}) + "\n" for i in range(5)))
    items.write_text("".join(json.dumps(r) + "\n" for r in _GOOD_ROWS))
    for writer, argv in FIGURE_WRITERS.items():
        out = tmp_path / f"{writer.split()[0]}{suffix}"
        outcome = run_case([a.format(metrics=metrics, items=items) for a in argv(str(out))], json_flag=False)
        assert outcome.exit_code == 2 and not outcome.problems, (writer, outcome)
        assert not out.exists()


@pytest.mark.parametrize(
    "argv",
    [["stats", "table"], ["stats", "leaderboard"], ["plot", "curves", "--out", "{where}/o.png"]],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_csv_header_of_100000_columns_is_one_line(argv, tmp_path):
    wide = make_file("wide_csv", tmp_path, ".csv")
    args = [*argv[:2], wide, *[a.format(where=tmp_path) for a in argv[2:]]]
    outcome = run_case(args, json_flag=False)  # hung past the 20 s case deadline before
    assert outcome.exit_code == 2 and not outcome.problems, outcome
    assert len(outcome.output) < 2000, outcome.output[:300]  # the columns are listed in part, not 100,000


# round five: an argument whose bytes are not UTF-8 (Python reads b"\\xff" as "\\udcff") reached orjson in the
# run record and the sweep plan: TypeError, exit 3. Each recorder x where the argument sits.
NOT_UTF8 = "a\udcffb"
RECORDERS = [
    ["runs", "exec", "--store", "{store}", "--", sys.executable, "-c", "pass", NOT_UTF8],
    ["sweep", "--grid", f"a={NOT_UTF8},2", "--seeds", "1", "--store", "{store}", "--", sys.executable, "-c", "pass"],
    ["sweep", "--grid", "a=1", "--seeds", "1", "--store", "{store}", "--", sys.executable, "-c", "pass", NOT_UTF8],
]


@pytest.mark.parametrize("argv", RECORDERS, ids=["runs exec command", "sweep grid value", "sweep command"])
def test_arguments_that_are_not_utf8_are_one_line_for_every_recorder(argv, tmp_path):
    outcome = run_case([a.format(store=tmp_path / "store") for a in argv], json_flag=False)
    assert outcome.exit_code == 2 and not outcome.problems, outcome
    assert "a\\xffb' is not UTF-8 text" in outcome.output, outcome.output[-500:]


def test_every_command_family_is_fuzzed():
    """A new command group must get a template here: the fuzz suite covers every family."""
    import typer

    from expkit.cli.app import app

    groups = set(typer.main.get_command(app).commands)
    assert groups <= set(FAMILIES), f"not fuzzed: {sorted(groups - set(FAMILIES))}"
