"""GRU encoder-decoder trained with teacher forcing: at each decoding step the
decoder input is the ground-truth previous token (starting from an SOS token)
rather than its own prediction, with the target sequence offset by one. Feeding
gold tokens to the decoder during training is the intended technique.

Source: https://pytorch.org/tutorials/intermediate/seq2seq_translation_tutorial.html
"""

import torch
from torch import nn

SOS = 0
torch.manual_seed(0)
V, H = 20, 32
enc_emb, dec_emb = nn.Embedding(V, H), nn.Embedding(V, H)
encoder, decoder = nn.GRU(H, H, batch_first=True), nn.GRU(H, H, batch_first=True)
proj = nn.Linear(H, V)
mods = [enc_emb, dec_emb, encoder, decoder, proj]
opt = torch.optim.Adam([p for m in mods for p in m.parameters()], lr=3e-3)
src = torch.randint(1, V, (16, 7))
tgt = src.flip(1)
for _step in range(6):
    _, h = encoder(enc_emb(src))
    dec_in = torch.cat([torch.full((16, 1), SOS), tgt[:, :-1]], dim=1)
    out, _ = decoder(dec_emb(dec_in), h)
    loss = nn.functional.cross_entropy(proj(out).reshape(-1, V), tgt.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
