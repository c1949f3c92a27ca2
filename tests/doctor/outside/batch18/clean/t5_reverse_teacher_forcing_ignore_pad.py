"""Tiny T5 trained with teacher forcing on a sequence-reversal task.

Source: https://discuss.huggingface.co/t/what-is-loss-function-for-t5/11669

As explained in the thread, T5 builds ``decoder_input_ids`` itself by shifting
``labels`` right and prepending the decoder start token, so the decoder is fed
the gold previous tokens (teacher forcing) while predicting the next one.
Target padding is replaced by -100 so the cross-entropy ignores it, and the
encoder gets an attention mask for its own padding.  Unusual parts: an
encoder-decoder with decoder inputs derived from labels, and ignore-index
masking of the target side only.
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, EOS, VOCAB, MAXLEN = 0, 1, 24, 8


def make_batch(bs, gen):
    src = torch.full((bs, MAXLEN + 1), PAD)
    tgt = torch.full((bs, MAXLEN + 1), PAD)
    for i in range(bs):
        n = int(torch.randint(3, MAXLEN + 1, (1,), generator=gen))
        toks = torch.randint(2, VOCAB, (n,), generator=gen)
        src[i, :n], src[i, n] = toks, EOS
        tgt[i, :n], tgt[i, n] = toks.flip(0), EOS
    labels = tgt.masked_fill(tgt == PAD, -100)
    return src, (src != PAD).long(), labels


def main():
    cfg = T5Config(
        vocab_size=VOCAB,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        dropout_rate=0.0,
        pad_token_id=PAD,
        eos_token_id=EOS,
        decoder_start_token_id=PAD,
    )
    model = T5ForConditionalGeneration(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
    gen = torch.Generator().manual_seed(0)
    for step in range(30):
        src, mask, labels = make_batch(16, gen)
        out = model(input_ids=src, attention_mask=mask, labels=labels)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 10 == 0 or step == 29:
            keep = labels != -100
            acc = (out.logits.argmax(-1)[keep] == labels[keep]).float().mean().item()
            print(f"step {step:3d} loss {out.loss.item():.4f} teacher-forced acc {acc:.3f}")


if __name__ == "__main__":
    main()
