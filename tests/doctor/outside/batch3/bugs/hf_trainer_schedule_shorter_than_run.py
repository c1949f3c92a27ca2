"""An HF Trainer is given its own optimizer and linear schedule (``optimizers=(opt, sched)``) whose
``num_training_steps`` is the length of one epoch, while the Trainer runs three epochs: the learning rate reaches
0 at the end of the first epoch and the last two epochs change nothing. transformers used to warn about
training beyond t_total; it no longer does.

Source: https://github.com/deepset-ai/FARM/issues/46
"""

import math
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, get_linear_schedule_with_warmup

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
rows = [{"input_ids": r, "labels": r} for r in torch.randint(0, 64, (64, 12))]
batch_size, epochs = 8, 3
steps_per_epoch = math.ceil(len(rows) / batch_size)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=2, num_training_steps=steps_per_epoch)  # BUG-LINE
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(), num_train_epochs=epochs, per_device_train_batch_size=batch_size,
    report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
)  # fmt: skip
Trainer(model=model, args=args, train_dataset=rows, optimizers=(opt, sched)).train()
