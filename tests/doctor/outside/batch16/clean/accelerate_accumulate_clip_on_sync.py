"""HF Accelerate gradient accumulation with clipping only on the synchronising micro-step.

Unusual but correct: Accelerator(gradient_accumulation_steps=4) and the
accumulate(model) context decide when the optimizer really steps;
accelerator.backward divides each micro-batch loss by 4 internally, so the
loss is NOT divided by hand. Gradient clipping with
accelerator.clip_grad_norm_ runs only when accelerator.sync_gradients is
True (i.e. on the full accumulated gradient). optimizer.step(),
scheduler.step() and zero_grad() are called every micro-step: the prepared
optimizer and scheduler skip the calls on non-sync micro-steps.

Source: https://github.com/huggingface/accelerate/issues/3661
"""

import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)


def main():
    accelerator = Accelerator(gradient_accumulation_steps=4, cpu=True)
    x = torch.randn(1024, 8)
    y = torch.tanh(x @ torch.randn(8, 1)) + 0.05 * torch.randn(1024, 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    loss_fn = nn.MSELoss()
    updates = 0
    for epoch in range(3):
        running = 0.0
        for xb, yb in loader:
            with accelerator.accumulate(model):
                loss = loss_fn(model(xb), yb)
                running += loss.item()
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    updates += 1
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
        print(
            f"epoch {epoch} mean loss {running / len(loader):.4f} updates {updates} "
            f"lr {optimizer.param_groups[0]['lr']:.4f}"
        )


if __name__ == "__main__":
    main()
