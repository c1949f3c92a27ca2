"""Tiny T5 trained from scratch on a sequence-reversal task with a hand-written training step.

The step prepares decoder inputs and labels the way the old seq2seq finetune.py did for
BART: decoder_input_ids = target[:, :-1] and labels = target[:, 1:]. T5 targets do not
start with a BOS token, so this drops the first target token from the labels and never
feeds the decoder_start_token (pad) to the decoder. The model is never trained to produce
the first output token from the start token, which is exactly what generation starts with;
the teacher-forced loss still decreases normally.

Source: https://github.com/huggingface/transformers/issues/5987
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, EOS, VOCAB = 0, 1, 32
HP = {"lr": 3e-3, "steps": 50, "batch": 16, "src_len": 6}


def make_batch(g):
    B, L = HP["batch"], HP["src_len"]
    src = torch.randint(2, VOCAB, (B, L), generator=g)
    eos = torch.full((B, 1), EOS)
    src_ids = torch.cat([src, eos], dim=1)
    tgt_ids = torch.cat([src.flip(1), eos], dim=1)
    return src_ids, tgt_ids


def training_step(model, src_ids, tgt_ids):
    decoder_input_ids = tgt_ids[:, :-1].contiguous()  # BUG-LINE
    labels = tgt_ids[:, 1:].clone()
    labels[labels == PAD] = -100
    out = model(
        input_ids=src_ids, attention_mask=(src_ids != PAD).long(), decoder_input_ids=decoder_input_ids, labels=labels
    )
    return out.loss


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
    opt = torch.optim.AdamW(model.parameters(), lr=HP["lr"])
    model.train()
    for step in range(1, HP["steps"] + 1):
        src_ids, tgt_ids = make_batch(g)
        loss = training_step(model, src_ids, tgt_ids)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
