"""An HF Trainer run whose warm-up is longer than the run itself (``warmup_steps`` copied from a long recipe,
``max_steps`` cut for a quick fine-tune): the learning rate climbs for the whole run and never gets near the
value the user set.

Source: https://github.com/open-mmlab/mmdetection/issues/7789
"""

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
rows = [{"input_ids": r, "labels": r} for r in torch.randint(0, 64, (96, 12))]
out = tempfile.mkdtemp()
args = TrainingArguments(
    output_dir=out, max_steps=12, learning_rate=5e-4, per_device_train_batch_size=8,
    warmup_steps=500,  # BUG-LINE
    report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
)  # fmt: skip
Trainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=rows).train()
