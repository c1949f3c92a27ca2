"""Prompt-masked SFT of a tiny GPT-2 where the response mask is shifted the wrong way.

Source: https://github.com/OpenRLHF/OpenRLHF/issues/973

The dataset marks response positions with ``loss_mask[prompt_len:] = 1``.  The
per-token log-probs are computed for targets ``input_ids[:, 1:]``, so the mask
must be ``loss_mask[:, 1:]``; the loss uses ``loss_mask[:, :-1]``.  The first
response token -- here the actual answer -- is therefore never part of the
loss.  Loss goes down nicely on the remaining response tokens, but the model
never learns to produce the answer.
"""

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

SEP, END, PAD = 1, 2, 0
DIGIT0, ANS0 = 10, 30


class AdditionSFTData:
    """prompt: a b SEP   response: (a+b)%10 END END"""

    def __init__(self, seed=0):
        self.g = torch.Generator().manual_seed(seed)

    def sample(self, bs):
        a = torch.randint(0, 10, (bs,), generator=self.g)
        b = torch.randint(0, 10, (bs,), generator=self.g)
        prompt = torch.stack([DIGIT0 + a, DIGIT0 + b, torch.full_like(a, SEP)], 1)
        resp = torch.stack([ANS0 + (a + b) % 10, torch.full_like(a, END), torch.full_like(a, END)], 1)
        ids = torch.cat([prompt, resp], 1)
        loss_mask = torch.zeros_like(ids, dtype=torch.float)
        loss_mask[:, prompt.size(1) :] = 1.0
        return ids, loss_mask, prompt.size(1)


def sft_loss(model, ids, loss_mask):
    logits = model(input_ids=ids).logits[:, :-1]
    logps = torch.gather(F.log_softmax(logits, -1), 2, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = loss_mask[:, :-1]  # BUG-LINE
    return -(logps * mask).sum() / mask.sum()


@torch.no_grad()
def answer_accuracy(model, data):
    ids, _, plen = data.sample(256)
    pred = model(input_ids=ids[:, :plen]).logits[:, -1].argmax(-1)
    return (pred == ids[:, plen]).float().mean().item()


def main():
    cfg = GPT2Config(
        vocab_size=48,
        n_positions=16,
        n_embd=64,
        n_layer=2,
        n_head=4,
        bos_token_id=PAD,
        eos_token_id=END,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    data = AdditionSFTData()
    for step in range(90):
        ids, mask, _ = data.sample(64)
        loss = sft_loss(model, ids, mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 30 == 0 or step == 89:
            print(f"step {step:3d} sft-loss {loss.item():.4f} answer-acc {answer_accuracy(model, data):.3f}")


if __name__ == "__main__":
    main()
