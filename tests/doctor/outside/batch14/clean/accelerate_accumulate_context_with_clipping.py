"""Accelerate loop doing gradient accumulation through `accelerator.accumulate`, with clipping
and a prepared scheduler.

Unusual but correct: `Accelerator(gradient_accumulation_steps=4)` plus
`with accelerator.accumulate(model):` around forward/backward/step. Inside the context the
prepared optimizer and scheduler only really step when `accelerator.sync_gradients` is True
(every 4th micro-batch), `accelerator.backward` divides the loss by 4, and gradient clipping is
done only on sync steps. As the maintainers explain in the report, calling optimizer.step() on
every iteration inside the context is fine because Accelerate skips the non-sync steps.

Source: https://github.com/huggingface/diffusers/issues/10855
"""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel, get_cosine_schedule_with_warmup

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ = 32, 16
data = torch.stack([(torch.arange(SEQ) + int(torch.randint(0, 8, (1,)))) % 8 + 2 for _ in range(192)])
loader = DataLoader(TensorDataset(data), batch_size=8, shuffle=True)

model = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=32, n_layer=2, n_head=2))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
scheduler = get_cosine_schedule_with_warmup(optimizer, num_warmup_steps=2, num_training_steps=len(loader) // 4)

accelerator = Accelerator(cpu=True, gradient_accumulation_steps=4)
model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

model.train()
updates = 0
for i, (x,) in enumerate(loader):
    with accelerator.accumulate(model):
        out = model(input_ids=x, labels=x)
        accelerator.backward(out.loss)
        if accelerator.sync_gradients:
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            updates += 1
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    if i % 8 == 0:
        print(f"micro-batch {i:2d} loss {out.loss.item():.4f} updates {updates}")
print(f"micro-batches {len(loader)}, optimizer updates {updates}")
