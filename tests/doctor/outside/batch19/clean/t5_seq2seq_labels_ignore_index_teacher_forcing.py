"""Tiny T5 (from config) trained on sequence reversal with teacher forcing done by the model.

Unusual but correct: only `labels` are passed. T5ForConditionalGeneration builds
decoder_input_ids itself by shifting the labels right and inserting decoder_start_token_id,
so every target token (including the first) is predicted from its true prefix (teacher
forcing). Variable-length targets are padded with -100 so padding never contributes to the
loss, and the decoder inputs built from -100 are mapped back to pad by the model.

Source: https://github.com/huggingface/transformers/pull/13240
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, EOS, VOCAB = 0, 1, 32


def make_batch(g, n=16):
    src_rows, tgt_rows = [], []
    for _ in range(n):
        L = int(torch.randint(3, 7, (1,), generator=g))
        s = torch.randint(2, VOCAB, (L,), generator=g)
        src_rows.append(torch.cat([s, torch.tensor([EOS])]))
        tgt_rows.append(torch.cat([s.flip(0), torch.tensor([EOS])]))
    S = max(len(r) for r in src_rows)
    src = torch.full((n, S), PAD)
    labels = torch.full((n, S), -100)
    for i, (s, t) in enumerate(zip(src_rows, tgt_rows)):
        src[i, : len(s)] = s
        labels[i, : len(t)] = t
    return src, (src != PAD).long(), labels


def main():
    g = torch.Generator().manual_seed(0)
    cfg = T5Config(
        vocab_size=VOCAB,
        d_model=48,
        d_kv=12,
        d_ff=96,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        pad_token_id=PAD,
        eos_token_id=EOS,
        decoder_start_token_id=PAD,
        dropout_rate=0.0,
    )
    model = T5ForConditionalGeneration(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for step in range(1, 51):
        src, mask, labels = make_batch(g)
        loss = model(input_ids=src, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
