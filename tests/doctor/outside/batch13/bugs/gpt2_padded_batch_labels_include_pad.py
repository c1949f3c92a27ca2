"""Plain PyTorch loop fine-tuning a GPT-2 LM on right-padded variable-length batches.

Sequences are padded to the batch maximum with the pad id and an attention_mask is passed, but
the labels are a straight copy of input_ids. The padded positions are therefore not set to -100
and the built-in causal-LM loss treats every "predict pad after pad" position as a real target.
Most positions in a batch are padding, so the reported loss drops quickly (pads are trivial to
predict) while the loss on the real tokens improves much less, and the model learns to emit pad.

Source: https://github.com/huggingface/transformers/issues/32832
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, PAD, LMAX = 30, 0, 16
cfg = GPT2Config(
    n_layer=2, n_embd=48, n_head=2, vocab_size=V, n_positions=LMAX, bos_token_id=1, eos_token_id=1, pad_token_id=PAD
)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)


def batch(n=32):
    lens = torch.randint(4, 9, (n,))
    ids = torch.full((n, LMAX), PAD)
    mask = torch.zeros(n, LMAX, dtype=torch.long)
    for i, k in enumerate(lens.tolist()):
        start = int(torch.randint(2, V, (1,)))
        seq = 2 + (start - 2 + 2 * torch.arange(k)) % (V - 2)  # tokens 2..V-1, stride 2
        ids[i, :k] = seq
        mask[i, :k] = 1
    return ids, mask


@torch.no_grad()
def real_token_loss():
    model.eval()
    ids, mask = batch(128)
    lab = ids.masked_fill(mask == 0, -100)
    out = model(input_ids=ids, attention_mask=mask, labels=lab).loss.item()
    model.train()
    return out


model.train()
for step in range(80):
    ids, mask = batch()
    labels = ids.clone()  # BUG-LINE
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step:3d} train loss {loss.item():.4f} | loss on real tokens {real_token_loss():.4f}")
print(f"final loss on real tokens {real_token_loss():.4f}")
