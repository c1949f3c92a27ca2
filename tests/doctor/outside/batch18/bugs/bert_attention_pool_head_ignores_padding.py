"""BERT classifier with an attention-pooling head that forgets the padding mask.

Source: https://github.com/BitVoyage/FastBERT/issues/14

The encoder receives ``attention_mask``, but the classifier layer on top (an
attention pooling over the last hidden states, as in FastBERT's per-layer
classifiers) computes its softmax over every position including ``[PAD]``.
Short sentences in long padded batches are pooled mostly from padding states,
so the prediction depends on how much padding the batch happens to have.
Nothing fails; training is just worse than it should be.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import BertConfig, BertModel

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, PAD, CLS, MAXLEN, KEY = 60, 0, 2, 32, 7


class AttnPoolClassifier(nn.Module):
    def __init__(self, hidden, n_cls):
        super().__init__()
        self.score = nn.Linear(hidden, 1)
        self.proj = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, n_cls))

    def forward(self, hidden_states, attention_mask):
        w = self.score(hidden_states).squeeze(-1)
        w = F.softmax(w, dim=-1)  # BUG-LINE
        pooled = torch.einsum("bt,bth->bh", w, hidden_states)
        return self.proj(pooled)


class BertWithPoolHead(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = BertConfig(
            vocab_size=VOCAB,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            max_position_embeddings=64,
            pad_token_id=PAD,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
        self.bert = BertModel(cfg, add_pooling_layer=False)
        self.classifier = AttnPoolClassifier(cfg.hidden_size, 2)

    def forward(self, input_ids, attention_mask):
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.classifier(h, attention_mask)


def make_batch(bs, gen):
    ids = torch.full((bs, MAXLEN), PAD)
    mask = torch.zeros_like(ids)
    y = torch.randint(0, 2, (bs,), generator=gen)
    for i in range(bs):
        n = int(torch.randint(3, 12, (1,), generator=gen))
        toks = torch.randint(10, VOCAB, (n,), generator=gen)
        if y[i] == 1:
            toks[int(torch.randint(0, n, (1,), generator=gen))] = KEY
        ids[i, 0] = CLS
        ids[i, 1 : n + 1] = toks
        mask[i, : n + 1] = 1
    return ids, mask, y


def main():
    model = BertWithPoolHead()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    for step in range(50):
        ids, mask, y = make_batch(24, gen)
        logits = model(ids, mask)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 49:
            print(f"step {step:3d} loss {loss.item():.4f} acc {(logits.argmax(-1) == y).float().mean():.3f}")


if __name__ == "__main__":
    main()
