"""Tiny BART trained (plain loop) to sort variable-length digit sequences.

Follows the fix that lets BART build decoder inputs from labels that contain -100:
target padding is written as -100 so CrossEntropyLoss ignores it, and no
decoder_input_ids are passed, so the model itself shifts the labels right
(replacing -100 by the pad id) for teacher forcing. Unusual but intended: the
decoder is fed gold previous tokens, padded label positions contribute nothing,
the encoder input is padded with an attention mask, and the loss is averaged only
over real target tokens, so batches with different amounts of padding get equal
per-token weight.

Source: https://github.com/huggingface/transformers/pull/9131
"""

import torch
from transformers import BartConfig, BartForConditionalGeneration

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, BOS, EOS, OFF, NDIG, MAXLEN = 1, 0, 2, 3, 10, 8


def batch(n):
    lengths = torch.randint(3, MAXLEN + 1, (n,))
    src = torch.full((n, MAXLEN + 2), PAD)
    lab = torch.full((n, MAXLEN + 2), -100)
    for i, L in enumerate(lengths.tolist()):
        d = torch.randint(0, NDIG, (L,)) + OFF
        src[i, : L + 2] = torch.cat([torch.tensor([BOS]), d, torch.tensor([EOS])])
        lab[i, : L + 2] = torch.cat([torch.tensor([BOS]), d.sort().values, torch.tensor([EOS])])
    return src, (src != PAD).long(), lab


cfg = BartConfig(
    vocab_size=NDIG + OFF,
    d_model=64,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=128,
    decoder_ffn_dim=128,
    max_position_embeddings=32,
    pad_token_id=PAD,
    bos_token_id=BOS,
    eos_token_id=EOS,
    decoder_start_token_id=EOS,
    forced_eos_token_id=None,
    dropout=0.0,
)
model = BartForConditionalGeneration(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

for step in range(100):
    src, mask, labels = batch(24)
    out = model(input_ids=src, attention_mask=mask, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 25 == 0:
        with torch.no_grad():
            pred = out.logits.argmax(-1)
            valid = labels != -100
            acc = (pred[valid] == labels[valid]).float().mean().item()
        print(f"step {step:3d} loss {out.loss.item():.4f} token acc {acc:.3f}")
print(f"final loss {out.loss.item():.4f}")
