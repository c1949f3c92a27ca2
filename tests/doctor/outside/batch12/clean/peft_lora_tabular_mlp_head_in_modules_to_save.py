"""Adapts a "pretrained" tabular MLP classifier to a shifted task with LoRA from peft. The MLP is first trained
normally on a source task (a few plain Adam steps), then wrapped with `get_peft_model` using a LoraConfig whose
`target_modules` are the two hidden Linear layers and whose `modules_to_save` is the final output Linear, so the
backbone stays frozen, the hidden layers only learn low-rank updates (whose B matrices start at zero, so the
adapted model starts out identical to the base model) and the classification head is trained as a full separate
copy while the original head is left untouched. The optimizer is built only from the parameters that still
require grad. Freezing nearly the whole network, a head that is trained as a copy and the zero-initialised
adapter are all intended.

Source: https://huggingface.co/docs/peft/developer_guides/custom_models
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model

torch.manual_seed(0)

N_FEAT, N_CLASS = 12, 4


class TabularMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(N_FEAT, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, N_CLASS))

    def forward(self, x):
        return self.seq(x)


def make_task(n, shift, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, N_FEAT, generator=g)
    w = torch.randn(N_FEAT, N_CLASS, generator=torch.Generator().manual_seed(100))
    logits = x @ w + shift * x[:, :N_CLASS].pow(2)
    return x, logits.argmax(1)


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main():
    base = TabularMLP()
    xs, ys = make_task(512, shift=0.0, seed=1)
    opt = torch.optim.Adam(base.parameters(), lr=1e-2)
    for _ in range(40):
        opt.zero_grad()
        F.cross_entropy(base(xs), ys).backward()
        opt.step()

    xt, yt = make_task(512, shift=1.5, seed=2)
    xv, yv = make_task(256, shift=1.5, seed=3)
    head_before = base.seq[4].weight.detach().clone()

    config = LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["seq.0", "seq.2"], modules_to_save=["seq.4"]
    )
    model = get_peft_model(base, config)
    model.print_trainable_parameters()
    print("target-task accuracy before", round(accuracy(model, xv, yv), 3))

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=5e-3, weight_decay=0.0)
    for step in range(60):
        model.train()
        idx = torch.randint(0, len(xt), (64,), generator=torch.Generator().manual_seed(step))
        loss = F.cross_entropy(model(xt[idx]), yt[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print("step", step, "loss", round(loss.item(), 4))

    wrapped_head = model.base_model.model.seq[4]
    print("target-task accuracy after", round(accuracy(model, xv, yv), 3))
    print("original head unchanged", torch.equal(wrapped_head.original_module.weight, head_before))
    print(
        "trained head copy moved", (wrapped_head.modules_to_save["default"].weight - head_before).abs().max().item() > 0
    )


if __name__ == "__main__":
    main()
