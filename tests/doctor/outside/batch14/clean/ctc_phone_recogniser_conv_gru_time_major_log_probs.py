"""CTC-trained phone recogniser on synthetic "audio" feature frames (conv front-end + BiGRU).

Unusual but correct: the model is batch-first internally, but nn.CTCLoss wants log-probs of
shape (T, N, C), so the output is log_softmax'ed over the class axis (dim=-1) and then
transposed to time-major. The strided convolution halves the frame rate, and the CTC input
lengths are recomputed from the true (unpadded) frame counts with the convolution's own length
formula; targets are given concatenated with per-utterance target lengths and blank = 0.
Greedy CTC decoding (collapse repeats, drop blanks) runs in a no-grad evaluation at the end.

Source: https://github.com/bentrevett/pytorch-seq2seq/issues/177
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_PHONES, FEAT, FRAMES_PER_PHONE, MAX_PHONES, H, BATCH = 6, 16, 6, 5, 48, 16
BLANK = 0
prototypes = torch.randn(N_PHONES + 1, FEAT) * 1.5  # index 0 unused (blank)


def make_batch(n):
    n_ph = torch.randint(2, MAX_PHONES + 1, (n,))
    max_frames = MAX_PHONES * FRAMES_PER_PHONE
    feats = 0.3 * torch.randn(n, max_frames, FEAT)
    targets, frames = [], []
    for i, k in enumerate(n_ph.tolist()):
        seq = torch.randint(1, N_PHONES + 1, (k,))
        for j, p in enumerate(seq.tolist()):
            feats[i, j * FRAMES_PER_PHONE : (j + 1) * FRAMES_PER_PHONE] += prototypes[p]
        targets.append(seq)
        frames.append(k * FRAMES_PER_PHONE)
    return feats, torch.tensor(frames), torch.cat(targets), n_ph, targets


class Recogniser(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(FEAT, H, kernel_size=3, stride=2, padding=1)
        self.gru = nn.GRU(H, H, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * H, N_PHONES + 1)

    def out_lengths(self, frames):
        return (frames + 2 * 1 - 3) // 2 + 1

    def forward(self, feats):
        h = F.relu(self.conv(feats.transpose(1, 2))).transpose(1, 2)  # (B, T', H)
        h, _ = self.gru(h)
        return self.out(h).log_softmax(dim=-1)  # (B, T', C)


model = Recogniser()
ctc = nn.CTCLoss(blank=BLANK, zero_infinity=True)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(150):
    feats, frames, flat_targets, tgt_lens, _ = make_batch(BATCH)
    log_probs = model(feats).transpose(0, 1)  # (T', B, C)
    loss = ctc(log_probs, flat_targets, model.out_lengths(frames), tgt_lens)
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} ctc loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    feats, frames, _, _, refs = make_batch(64)
    best = model(feats).argmax(-1)
    correct = 0
    for i, L in enumerate(model.out_lengths(frames).tolist()):
        path = best[i, :L].tolist()
        hyp = [p for j, p in enumerate(path) if p != BLANK and (j == 0 or p != path[j - 1])]
        correct += hyp == refs[i].tolist()
print(f"exact-match utterances {correct}/64")
