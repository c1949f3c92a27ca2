"""Tiny T5 seq2seq training where padded target positions are left as pad ids in labels.

Targets have variable length and are right-padded with the pad id (0). The padded tensor is
passed directly as `labels`; T5's loss only ignores -100, so every pad position is counted
as a target. Most target positions are padding, so the loss falls quickly by learning to
emit pad, while the real target tokens are under-weighted. No error is raised.

Source: https://github.com/allenai/allennlp/issues/5342
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
torch.set_num_threads(2)

V, PAD, EOS = 60, 0, 1
cfg = T5Config(
    vocab_size=V,
    d_model=48,
    d_kv=12,
    d_ff=96,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=4,
    dropout_rate=0.0,
    pad_token_id=PAD,
    eos_token_id=EOS,
    decoder_start_token_id=PAD,
)
model = T5ForConditionalGeneration(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)


def make_batch(bs=16, max_len=20):
    src = torch.full((bs, max_len), PAD)
    tgt = torch.full((bs, max_len + 1), PAD)
    for i in range(bs):
        n = int(torch.randint(2, 7, (1,)))
        toks = torch.randint(2, V, (n,))
        src[i, :n] = toks
        tgt[i, :n] = toks.flip(0)
        tgt[i, n] = EOS
    return src, (src != PAD).long(), tgt


for it in range(120):
    src, mask, tgt = make_batch()
    labels = tgt  # BUG-LINE
    out = model(input_ids=src, attention_mask=mask, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if it % 30 == 0:
        print(f"step {it} loss {out.loss.item():.4f}")

with torch.no_grad():
    src, mask, tgt = make_batch()
    logits = model(input_ids=src, attention_mask=mask, labels=tgt).logits
    real = tgt != PAD
    acc = (logits.argmax(-1)[real] == tgt[real]).float().mean().item()
print(f"accuracy on real target tokens {acc:.3f}")
