"""Tiny BERT sequence classifier fine-tuned with the embedding layer meant to stay frozen.

The helper `freeze_parts` follows a suggestion from the source thread and writes
`module.requires_grad = False` on the embeddings sub-module. That only creates a plain
Python attribute on the nn.Module; it does not touch the parameters, whose requires_grad
stays True. Nothing is frozen: the optimizer keeps updating the word/position embeddings
(the part the experiment was supposed to keep fixed), and the run looks normal.

Source: https://github.com/huggingface/transformers/issues/95
"""

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

TRAIN = {"lr": 1e-3, "steps": 40, "batch": 16, "freeze": ["embeddings"]}


def freeze_parts(model, names):
    for name in names:
        module = getattr(model.bert, name)
        module.requires_grad = False  # BUG-LINE


def make_batch(g, vocab=50, seq=10, n=16):
    ids = torch.randint(5, vocab, (n, seq), generator=g)
    ids[:, 0] = 2  # [CLS]
    y = (ids[:, 1:] > 30).sum(dim=1).gt(4).long()
    return ids, y


def main():
    g = torch.Generator().manual_seed(0)
    cfg = BertConfig(
        vocab_size=50,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=32,
        num_labels=2,
        pad_token_id=0,
    )
    model = BertForSequenceClassification(cfg)
    freeze_parts(model, TRAIN["freeze"])

    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=TRAIN["lr"])
    model.train()
    for step in range(1, TRAIN["steps"] + 1):
        ids, y = make_batch(g, n=TRAIN["batch"])
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids))
        loss = F.cross_entropy(out.logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            acc = (out.logits.argmax(-1) == y).float().mean().item()
            print(f"step {step:3d}  loss {loss.item():.4f}  acc {acc:.2f}")


if __name__ == "__main__":
    main()
