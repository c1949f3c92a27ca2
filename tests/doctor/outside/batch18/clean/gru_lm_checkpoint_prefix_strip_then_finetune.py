"""Pre-train a GRU language model under DataParallel, then reload it for classification.

Source: https://github.com/nayeemrizve/OpenLDN/issues/5

The issue's checkpoint had every key prefixed with ``module.`` (saved from a
DataParallel wrapper) and was loaded with ``strict=False``, which silently
skips every mismatching key.  Here the prefix is stripped explicitly, the
backbone is loaded non-strictly *only* because the new classification head is
absent from the checkpoint, and the returned ``missing_keys`` /
``unexpected_keys`` are checked so that nothing else is skipped.  Unusual
parts: two training phases in one script, a checkpoint round-trip through a
temporary file, and a deliberately partial state-dict load.
"""

import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, D, SEQ = 50, 64, 20


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.rnn = nn.GRU(D, D, batch_first=True)

    def forward(self, ids):
        return self.rnn(self.embed(ids))[0]


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.lm_head = nn.Linear(D, VOCAB)

    def forward(self, ids):
        return self.lm_head(self.backbone(ids))


class Classifier(nn.Module):
    def __init__(self, n_cls=3):
        super().__init__()
        self.backbone = Backbone()
        self.cls_head = nn.Linear(D, n_cls)

    def forward(self, ids):
        return self.cls_head(self.backbone(ids)[:, -1])


def lm_batch(gen, bs=32):
    start = torch.randint(0, VOCAB, (bs, 1), generator=gen)
    stride = torch.randint(1, 4, (bs, 1), generator=gen)
    return (start + stride * torch.arange(SEQ)) % VOCAB, stride.squeeze(1) - 1


def load_backbone(model, path):
    state = torch.load(path, map_location="cpu")
    state = {k[len("module.") :] if k.startswith("module.") else k: v for k, v in state.items()}
    state = {k: v for k, v in state.items() if k.startswith("backbone.")}
    result = model.load_state_dict(state, strict=False)
    assert not result.unexpected_keys, result.unexpected_keys
    assert all(k.startswith("cls_head.") for k in result.missing_keys), result.missing_keys
    return result


def main():
    gen = torch.Generator().manual_seed(0)
    lm = nn.DataParallel(LanguageModel())
    opt = torch.optim.Adam(lm.parameters(), lr=3e-3)
    for step in range(60):
        ids, _ = lm_batch(gen)
        logits = lm(ids)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == 59:
            print(f"[pretrain] step {step:2d} lm-loss {loss.item():.4f}")
    path = os.path.join(tempfile.mkdtemp(), "lm.pt")
    torch.save(lm.state_dict(), path)

    clf = Classifier()
    res = load_backbone(clf, path)
    print("missing after load:", res.missing_keys)
    opt = torch.optim.Adam(
        [{"params": clf.backbone.parameters(), "lr": 5e-4}, {"params": clf.cls_head.parameters(), "lr": 5e-3}]
    )
    for step in range(40):
        ids, y = lm_batch(gen)
        logits = clf(ids)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 39:
            print(f"[finetune] step {step:2d} loss {loss.item():.4f} acc {(logits.argmax(-1) == y).float().mean():.2f}")


if __name__ == "__main__":
    main()
