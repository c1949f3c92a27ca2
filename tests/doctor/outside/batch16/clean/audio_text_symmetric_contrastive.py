"""CLIP-style audio/text contrastive pretraining with a symmetric loss.

Unusual but correct: one (B, B) similarity matrix is log-softmaxed along dim=1
(audio -> text, over the text items of the batch) AND along dim=0 (text -> audio,
over the audio items of the batch), and the diagonal of each is the positive.
Softmaxing over the batch axis (dim=0) is intended: it is the second direction
of the symmetric InfoNCE loss from the CLIP paper, which the DALLE-pytorch CLIP
implementation was corrected to include.

Source: https://github.com/lucidrains/DALLE-pytorch/issues/32
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_CLASSES, N_MELS, T, VOCAB, B = 40, 16, 24, 30, 32
mel_proto = torch.randn(N_CLASSES, N_MELS, 1)
captions = torch.randint(1, VOCAB, (N_CLASSES, 5))


def sample(bs):
    c = torch.randperm(N_CLASSES)[:bs]
    spec = mel_proto[c] * torch.linspace(0.5, 1.5, T) + 0.3 * torch.randn(bs, N_MELS, T)
    txt = captions[c].clone()
    drop = torch.rand(txt.shape) < 0.2
    txt[drop] = 0
    return spec, txt


audio_enc = nn.Sequential(
    nn.Conv1d(N_MELS, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 32)
)
text_emb = nn.EmbeddingBag(VOCAB, 32, mode="mean", padding_idx=0)
text_proj = nn.Linear(32, 32)
logit_scale = nn.Parameter(torch.tensor(2.0))
params = [*audio_enc.parameters(), *text_emb.parameters(), *text_proj.parameters(), logit_scale]
opt = torch.optim.AdamW(params, lr=3e-3)

for step in range(80):
    spec, txt = sample(B)
    a = F.normalize(audio_enc(spec), dim=-1)
    t = F.normalize(text_proj(text_emb(txt)), dim=-1)
    sim = logit_scale.exp().clamp(max=100) * a @ t.T
    loss_a2t = -F.log_softmax(sim, dim=1).diagonal().mean()
    loss_t2a = -F.log_softmax(sim, dim=0).diagonal().mean()
    loss = 0.5 * (loss_a2t + loss_t2a)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 79:
        print(f"step {step:3d} a2t {loss_a2t.item():.3f} t2a {loss_t2a.item():.3f}")

with torch.no_grad():
    spec, txt = sample(B)
    sim = F.normalize(audio_enc(spec), dim=-1) @ F.normalize(text_proj(text_emb(txt)), dim=-1).T
    print("top-1 retrieval", (sim.argmax(1) == torch.arange(B)).float().mean().item())
