"""Accelerate loop configured for gradient accumulation that never enters `accelerator.accumulate`.

`Accelerator(gradient_accumulation_steps=4)` is set, but the loop calls `accelerator.backward`
and `optimizer.step()` on every batch without wrapping the step in
`with accelerator.accumulate(model):`. Outside that context the gradient state always says
"sync", so the prepared optimizer steps (and zeroes) after every micro-batch, while
`accelerator.backward` still divides every loss by 4. The accumulation setting is silently
ignored: no larger effective batch, and every update is 4x smaller than intended. The reporter
asked why simply setting gradient_accumulation_steps on the Accelerator did not work.

Source: https://github.com/tianweiy/DMD2/issues/23
"""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ = 32, 16
base = torch.arange(SEQ) % 8
data = torch.stack([(base + int(torch.randint(0, 8, (1,)))) % 8 + 2 for _ in range(192)])
loader = DataLoader(TensorDataset(data), batch_size=8, shuffle=True)

model = GPT2LMHeadModel(
    GPT2Config(
        vocab_size=VOCAB,
        n_positions=SEQ,
        n_embd=32,
        n_layer=2,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)

accelerator = Accelerator(cpu=True, gradient_accumulation_steps=4)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

model.train()
step = 0
for epoch in range(1):
    for (x,) in loader:
        out = model(input_ids=x, labels=x)  # BUG-LINE
        accelerator.backward(out.loss)
        optimizer.step()
        optimizer.zero_grad()
        if step % 8 == 0:
            print(f"micro-step {step:3d} loss {out.loss.item():.4f} sync={accelerator.sync_gradients}")
        step += 1
print("done")
