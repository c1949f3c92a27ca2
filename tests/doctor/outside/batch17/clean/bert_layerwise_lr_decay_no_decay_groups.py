"""BERT classifier fine-tuning with layer-wise LR decay, no-decay groups and linear warmup.

Modelled on the question of combining discriminative (per-layer) learning rates with
weight_decay=0 for biases and LayerNorm weights. Unusual but intended: 2 x (layers+2)
parameter groups with different lr and weight decay; the embedding group gets the
smallest lr and the classifier head the largest; the schedule starts at lr = 0 (the
very first optimizer step changes nothing) and warms up linearly, and every group's
lr is scaled by the same schedule factor; gradient norm clipping before each step.

Source: https://github.com/huggingface/transformers/issues/4962
"""

import torch
from transformers import BertConfig, BertForSequenceClassification, get_linear_schedule_with_warmup

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, LAYERS = 40, 12, 3
cfg = BertConfig(
    vocab_size=V,
    hidden_size=48,
    num_hidden_layers=LAYERS,
    num_attention_heads=4,
    intermediate_size=96,
    max_position_embeddings=T,
    num_labels=3,
)
model = BertForSequenceClassification(cfg)

BASE_LR, DECAY, WD = 3e-3, 0.8, 0.01
NO_DECAY = ("bias", "LayerNorm.weight")


def depth(name):
    if name.startswith("bert.embeddings"):
        return 0
    if name.startswith("bert.encoder.layer."):
        return int(name.split(".")[3]) + 1
    return LAYERS + 1  # pooler + classifier


groups = {}
for name, p in model.named_parameters():
    d = depth(name)
    nd = any(k in name for k in NO_DECAY)
    key = (d, nd)
    if key not in groups:
        groups[key] = {"params": [], "lr": BASE_LR * DECAY ** (LAYERS + 1 - d), "weight_decay": 0.0 if nd else WD}
    groups[key]["params"].append(p)
opt = torch.optim.AdamW(list(groups.values()))
sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=10, num_training_steps=100)
print(
    f"{len(opt.param_groups)} parameter groups, lrs "
    f"{sorted({round(g['initial_lr'], 6) for g in opt.param_groups})}, lr now {opt.param_groups[0]['lr']}"
)


def batch(n):
    ids = torch.randint(3, V, (n, T))
    ids[:, 0] = 1
    y = torch.bucketize(ids[:, 1:].float().mean(1), torch.tensor([19.0, 23.0]))
    return ids, y


for step in range(100):
    ids, y = batch(32)
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=y)
    opt.zero_grad()
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    if step % 10 == 0:
        acc = (out.logits.argmax(-1) == y).float().mean().item()
        print(f"step {step:3d} loss {out.loss.item():.4f} acc {acc:.2f} head lr {opt.param_groups[-1]['lr']:.6f}")
print(f"final loss {out.loss.item():.4f}")
