"""Stage 6: LoRA SFT on the Hugging Face stack: label audit, stop-token contract, the does-it-stop test,
and the offline demo model and synthetic chat data they are tested on.

    tok = load_chat_tokenizer("demo")
    audit = audit_labels(tokenizer=tok, examples=read_chat_file("train.jsonl").examples)
    result = train_lora_sft(model_dir="demo", examples=..., out_dir="sft-out", settings=SFTSettings(steps=100))
    check = check_stopping(model_dir="demo", adapter_dir=result.adapter_dir, examples=held_out)
"""

from expkit.finetune.chatdata import (
    ChatExample,
    ChatFile,
    generate_chat_examples,
    iter_chat_examples,
    read_chat_file,
    write_chat_jsonl,
)
from expkit.finetune.contract import StopContract, enforce_stop_contract, read_stop_contract
from expkit.finetune.demomodel import DemoModel, build_demo_model, demo_model_spec, ensure_demo_model
from expkit.finetune.labels import (
    EndOfTurn,
    LabelAudit,
    LabelBuilder,
    LabelProblem,
    audit_labels,
    find_end_of_turn,
    load_chat_tokenizer,
)
from expkit.finetune.stopping import EosContrast, StopCheck, check_stopping, compare_eos_in_loss
from expkit.finetune.tracing import CallChain, trace_compute_loss
from expkit.finetune.training import SFTResult, SFTSettings, train_lora_sft

__all__ = [
    "CallChain",
    "ChatExample",
    "ChatFile",
    "DemoModel",
    "EndOfTurn",
    "EosContrast",
    "LabelAudit",
    "LabelBuilder",
    "LabelProblem",
    "SFTResult",
    "SFTSettings",
    "StopCheck",
    "StopContract",
    "audit_labels",
    "build_demo_model",
    "check_stopping",
    "compare_eos_in_loss",
    "demo_model_spec",
    "enforce_stop_contract",
    "ensure_demo_model",
    "find_end_of_turn",
    "generate_chat_examples",
    "iter_chat_examples",
    "load_chat_tokenizer",
    "read_chat_file",
    "read_stop_contract",
    "trace_compute_loss",
    "train_lora_sft",
    "write_chat_jsonl",
]
