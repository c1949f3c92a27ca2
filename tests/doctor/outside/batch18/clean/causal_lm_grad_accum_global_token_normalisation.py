"""Causal-LM gradient accumulation normalised by the token count of the whole window.

Source: https://github.com/huggingface/transformers/issues/35203

With padded, variable-length micro-batches, averaging each micro-batch's mean
loss weights tokens unequally across the accumulation window.  The issue is
about getting the denominator right.  Here the number of supervised tokens in
all micro-batches of an optimizer step is counted first, each micro-batch's
*summed* token loss is divided by that global count, and the optimizer steps
once per window, so the accumulated gradient equals the full-batch
per-token-mean gradient.  Unusual parts: a two-pass loop over the window,
``reduction="sum"`` losses, and ``ignore_index`` masks on padding.
"""

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB, ACCUM, MICRO_BS, MAXLEN = 0, 64, 4, 4, 24


def micro_batch(gen):
    lens = torch.randint(4, MAXLEN + 1, (MICRO_BS,), generator=gen)
    ids = torch.full((MICRO_BS, MAXLEN), PAD)
    for i, n in enumerate(lens.tolist()):
        start = int(torch.randint(1, VOCAB, (1,), generator=gen))
        stride = int(torch.randint(1, 4, (1,), generator=gen))
        ids[i, :n] = (start + stride * torch.arange(n)) % (VOCAB - 1) + 1
    mask = (ids != PAD).long()
    labels = ids.masked_fill(mask == 0, -100)
    return ids, mask, labels


def main():
    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_positions=32,
        n_embd=64,
        n_layer=2,
        n_head=4,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=PAD,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(0)
    for update in range(25):
        window = [micro_batch(gen) for _ in range(ACCUM)]
        n_tokens = sum(int((lab[:, 1:] != -100).sum()) for _, _, lab in window)
        total = 0.0
        for ids, mask, labels in window:
            logits = model(input_ids=ids, attention_mask=mask).logits
            loss_sum = F.cross_entropy(
                logits[:, :-1].reshape(-1, VOCAB), labels[:, 1:].reshape(-1), ignore_index=-100, reduction="sum"
            )
            (loss_sum / n_tokens).backward()
            total += loss_sum.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if update % 5 == 0 or update == 24:
            print(f"update {update:2d} tokens {n_tokens:4d} loss/token {total / n_tokens:.4f}")


if __name__ == "__main__":
    main()
