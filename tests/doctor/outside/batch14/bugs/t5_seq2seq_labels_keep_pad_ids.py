"""Tiny T5 seq2seq fine-tuning (hand-written loop) whose labels still contain pad ids.

The target sequences are right-padded with the pad id (0) and the padded tensor is handed to
T5ForConditionalGeneration as `labels` unchanged. The model's cross-entropy only ignores -100,
so every padding position becomes a training target: a large share of the loss is "predict pad
after pad", the loss falls nicely, yet the model mostly learns to emit padding (the reporter's
bert2bert model generated the same token for any input). Padding positions in labels must be
replaced by -100.

Source: https://github.com/huggingface/transformers/issues/7896
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, EOS, VOCAB, MAXLEN = 0, 1, 24, 12


def make_batch(bs=12):
    src = torch.full((bs, MAXLEN), PAD, dtype=torch.long)
    tgt = torch.full((bs, MAXLEN), PAD, dtype=torch.long)
    for i in range(bs):
        n = int(torch.randint(2, 6, (1,)))
        seq = torch.randint(2, VOCAB, (n,))
        src[i, :n] = seq
        src[i, n] = EOS
        tgt[i, :n] = seq.flip(0)
        tgt[i, n] = EOS
    return src, (src != PAD).long(), tgt


config = T5Config(
    vocab_size=VOCAB,
    d_model=32,
    d_ff=64,
    d_kv=16,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=2,
    pad_token_id=PAD,
    eos_token_id=EOS,
    decoder_start_token_id=PAD,
    dropout_rate=0.0,
)
model = T5ForConditionalGeneration(config)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

model.train()
for step in range(30):
    src, src_mask, tgt = make_batch()
    labels = tgt  # BUG-LINE
    out = model(input_ids=src, attention_mask=src_mask, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step:3d} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    src, src_mask, tgt = make_batch(24)
    logits = model(input_ids=src, attention_mask=src_mask, labels=tgt).logits
    real = tgt != PAD
    acc = (logits.argmax(-1)[real] == tgt[real]).float().mean().item()
print(f"token accuracy on real (non-pad) target positions: {acc:.3f}")
