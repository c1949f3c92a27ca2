"""An HF Trainer run with ``gradient_accumulation_steps=4`` and ``max_grad_norm=0.5`` (the Trainer divides,
clips after the last micro-batch and steps once per 4 backwards) and a cosine schedule over the run. Correct.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/4092
"""

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
rows = [{"input_ids": r, "labels": r} for r in torch.randint(0, 64, (128, 12))]
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(), max_steps=4, per_device_train_batch_size=4, gradient_accumulation_steps=4,
    max_grad_norm=0.5, learning_rate=5e-4, lr_scheduler_type="cosine", report_to="none", use_cpu=True,
    save_strategy="no", disable_tqdm=True,
)  # fmt: skip
Trainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=rows).train()
