"""Mixed precision on CPU: bf16 autocast + GradScaler, unscaling before clipping (correct).

Unusual but correct: the forward pass of a small sequence classifier runs under
``torch.autocast("cpu", dtype=torch.bfloat16)``, the loss is computed in float32
outside the autocast region, and the loss is scaled with ``torch.amp.GradScaler``.
Before gradient-norm clipping the gradients are explicitly unscaled with
``scaler.unscale_(optimizer)`` so that ``max_norm`` applies to the true gradients,
then ``scaler.step`` (which does not unscale a second time) and
``scaler.update`` are called.  This is the ordering the report's fix adopts.

Source: https://github.com/rwth-i6/returnn/pull/1595
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

OPTS = {"vocab": 50, "d_model": 64, "seq": 24, "classes": 3, "steps": 60, "batch": 32, "max_grad_norm": 1.0}


MARKERS = torch.tensor([3, 7, 11])


def batch(n):
    tok = torch.randint(12, OPTS["vocab"], (n, OPTS["seq"]))
    cls = torch.randint(0, 3, (n,))
    pos = torch.rand(n, OPTS["seq"]).argsort(1)[:, :4]
    tok.scatter_(1, pos, MARKERS[cls][:, None].expand(-1, 4))
    return tok, cls


class SeqClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(OPTS["vocab"], OPTS["d_model"])
        self.conv = nn.Conv1d(OPTS["d_model"], OPTS["d_model"], 3, padding=1)
        self.norm = nn.LayerNorm(OPTS["d_model"])
        self.out = nn.Linear(OPTS["d_model"], OPTS["classes"])

    def forward(self, tok):
        h = self.emb(tok)
        h = h + F.gelu(self.conv(h.transpose(1, 2))).transpose(1, 2)
        return self.out(self.norm(h).max(1).values)


def main():
    model = SeqClassifier()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    for step in range(OPTS["steps"]):
        tok, y = batch(OPTS["batch"])
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(tok)
        loss = F.cross_entropy(logits.float(), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), OPTS["max_grad_norm"])
        scaler.step(opt)
        scaler.update()
        if step % 20 == 0 or step == OPTS["steps"] - 1:
            print(f"step {step:3d} loss {loss.item():.4f} grad_norm {gnorm.item():.3f} scale {scaler.get_scale():.0f}")
    tok, y = batch(256)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        acc = (model(tok).argmax(-1) == y).float().mean().item()
    print(f"eval accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
