"""Linear probe on top of a (briefly MLM-pretrained) tiny BERT encoder, plain PyTorch loop.

The intent is to keep the encoder frozen and train only the classification head
with a large learning rate. The freeze is written as `model.bert.requires_grad =
False`, which only sets a plain Python attribute on the nn.Module; it does not touch
the parameters' requires_grad flags (that needs `requires_grad_(False)` or a loop
over parameters). The filter over `requires_grad` therefore hands every encoder
parameter to the optimizer too, and the pretrained encoder is overwritten with the
head's large learning rate. No error or warning is raised.

Source: https://discuss.pytorch.org/t/requires-grad-doesnt-propagate-to-the-parameters-of-the-module/9979
"""

import torch
from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, MASK, CLS = 40, 12, 2, 1
cfg = BertConfig(
    vocab_size=V,
    hidden_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=96,
    max_position_embeddings=T,
    num_labels=2,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


def sentences(n):
    ids = torch.randint(4, V, (n, T))
    ids[:, 0] = CLS
    return ids


# stage 1: short masked-LM pretraining of the encoder
mlm = BertForMaskedLM(cfg)
mlm_opt = torch.optim.AdamW(mlm.parameters(), lr=2e-3)
for _ in range(20):
    ids = sentences(32)
    ids[:, 1:] = (ids[:, 1:2] + torch.arange(T - 1)) % (V - 4) + 4  # counting sentences
    labels = ids.clone()
    m = torch.rand(ids.shape) < 0.15
    m[:, 0] = False
    labels[~m] = -100
    inp = ids.masked_fill(m, MASK)
    loss = mlm(input_ids=inp, labels=labels).loss
    mlm_opt.zero_grad()
    loss.backward()
    mlm_opt.step()
print(f"mlm loss {loss.item():.4f}")

# stage 2: linear probe
clf = BertForSequenceClassification(cfg)
clf.bert.load_state_dict(mlm.bert.state_dict(), strict=False)
clf.bert.requires_grad = False  # BUG-LINE
opt = torch.optim.SGD([p for p in clf.parameters() if p.requires_grad], lr=0.1, momentum=0.9)

for step in range(60):
    ids = sentences(32)
    y = (ids[:, 1:].float().mean(1) > (V + 3) / 2).long()
    out = clf(input_ids=ids, attention_mask=torch.ones_like(ids), labels=y)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        acc = (out.logits.argmax(-1) == y).float().mean().item()
        print(f"step {step:3d} loss {out.loss.item():.4f} acc {acc:.2f}")
print(f"final loss {out.loss.item():.4f}")
