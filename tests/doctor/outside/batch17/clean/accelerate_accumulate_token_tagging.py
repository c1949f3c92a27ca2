"""Token tagging with a tiny BERT under Hugging Face Accelerate gradient accumulation.

Modelled on the fix of the accumulate() docs example: the `with
accelerator.accumulate(model):` block is entered *inside* the batch loop, once per
micro-batch. Unusual but intended: optimizer.step(), scheduler.step() and zero_grad()
are written on every micro-batch, yet the prepared optimizer/scheduler only act on
every 4th batch (when accelerator.sync_gradients is True) and accelerator.backward
divides the loss by the accumulation count; padded positions carry label -100.

Source: https://github.com/huggingface/accelerate/pull/1211
"""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import BertConfig, BertForTokenClassification, get_linear_schedule_with_warmup

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, PAD, N = 30, 10, 0, 512
ACCUM = 4


def build():
    ids = torch.randint(1, V, (N, T))
    lengths = torch.randint(4, T + 1, (N,))
    mask = (torch.arange(T) < lengths[:, None]).long()
    ids = ids * mask  # pad with 0
    tags = (ids % 3).clone()  # tag = token id mod 3
    tags[mask == 0] = -100
    return TensorDataset(ids, mask, tags)


accelerator = Accelerator(cpu=True, gradient_accumulation_steps=ACCUM)
cfg = BertConfig(
    vocab_size=V,
    hidden_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=96,
    max_position_embeddings=T,
    num_labels=3,
    pad_token_id=PAD,
)
model = BertForTokenClassification(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
loader = DataLoader(build(), batch_size=8, shuffle=True)
epochs = 3
sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=5, num_training_steps=epochs * len(loader) // ACCUM)
model, opt, loader, sched = accelerator.prepare(model, opt, loader, sched)

updates = 0
for epoch in range(epochs):
    model.train()
    for ids, mask, tags in loader:
        with accelerator.accumulate(model):
            out = model(input_ids=ids, attention_mask=mask, labels=tags)
            accelerator.backward(out.loss)
            opt.step()
            sched.step()
            opt.zero_grad()
        if accelerator.sync_gradients:
            updates += 1
            if updates % 10 == 0:
                print(f"epoch {epoch} update {updates:3d} loss {out.loss.item():.4f} lr {sched.get_last_lr()[0]:.5f}")
print(f"optimizer updates {updates}, final loss {out.loss.item():.4f}")
