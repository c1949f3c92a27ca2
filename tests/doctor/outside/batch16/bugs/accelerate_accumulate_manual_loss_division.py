"""Gradient accumulation with HF Accelerate on a small regression MLP (SGD).

The loop uses Accelerator(gradient_accumulation_steps=4) together with the
accelerator.accumulate(model) context and accelerator.backward(loss), and it
also divides the loss by the number of accumulation steps by hand, as in a
plain PyTorch accumulation loop. accelerator.backward already divides the
loss by gradient_accumulation_steps, so the gradients are scaled down twice:
every update is 4x smaller than intended, which with plain SGD is the same as
silently training with a quarter of the learning rate. The loss still goes
down, just much more slowly.

Source: https://github.com/huggingface/accelerate/issues/3533
"""

import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

ACCUM = 4


def main():
    accelerator = Accelerator(gradient_accumulation_steps=ACCUM, cpu=True)
    x = torch.randn(1024, 8)
    w_true = torch.randn(8, 1)
    y = torch.tanh(x @ w_true) + 0.05 * torch.randn(1024, 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)

    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    loss_fn = nn.MSELoss()

    updates = 0
    for epoch in range(3):
        running = 0.0
        for xb, yb in loader:
            with accelerator.accumulate(model):
                loss = loss_fn(model(xb), yb)
                running += loss.item()
                loss = loss / ACCUM  # BUG-LINE
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 5.0)
                    updates += 1
                optimizer.step()
                optimizer.zero_grad()
        print(f"epoch {epoch} mean loss {running / len(loader):.4f} updates {updates}")


if __name__ == "__main__":
    main()
