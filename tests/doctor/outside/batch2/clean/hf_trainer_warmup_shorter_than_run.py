"""An HF Trainer run with a one-step warm-up and a linear decay: the learning rate
reaches the value set after the warm-up and decays to 0 at the planned last step.

Source: https://github.com/open-mmlab/mmdetection/issues/7789
"""

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
rows = [{"input_ids": r, "labels": r} for r in torch.randint(0, 64, (96, 12))]
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    max_steps=12,
    warmup_steps=1,
    learning_rate=5e-4,
    per_device_train_batch_size=8,
    report_to="none",
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
)
Trainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=rows).train()
