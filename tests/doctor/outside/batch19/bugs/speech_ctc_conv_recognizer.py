"""Small speech recognizer (dilated temporal-conv acoustic model) trained with CTC on synthetic filterbank frames.

The acoustic model's classifier outputs are handed to nn.CTCLoss directly. CTCLoss expects
log-probabilities (log_softmax over the class axis); with raw logits the "loss" is not a proper
negative log-likelihood: it can go negative and can be lowered simply by inflating all logits,
so training reports a falling loss while the alignment model learns little. The reporter saw a
negative CTC loss with parameters that stopped improving; adding log_softmax fixed it.

Source: https://github.com/SeanNaren/deepspeech.pytorch/issues/488
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

HPARAMS = {
    "n_feats": 20,
    "n_class": 8,  # blank (0) + 7 "phonemes"
    "hidden": 32,
    "lr": 3e-3,
    "batch_size": 16,
    "steps": 100,
    "frames_per_token": 4,
}


def synth_utterance(n_tokens, g):
    """Each token is rendered as a few noisy frames of its prototype spectrum."""
    tokens = torch.randint(1, HPARAMS["n_class"], (n_tokens,), generator=g)
    frames = []
    for t in tokens.tolist():
        proto = torch.zeros(HPARAMS["n_feats"])
        proto[(t * 2) % HPARAMS["n_feats"]] = 3.0
        proto[(t * 2 + 1) % HPARAMS["n_feats"]] = 2.0
        k = HPARAMS["frames_per_token"]
        frames.append(proto.repeat(k, 1) + 0.3 * torch.randn(k, HPARAMS["n_feats"], generator=g))
        frames.append(0.3 * torch.randn(1, HPARAMS["n_feats"], generator=g))  # short pause
    return torch.cat(frames), tokens


def collate(batch):
    feats, labels = zip(*batch)
    feat_lens = torch.tensor([f.shape[0] for f in feats])
    label_lens = torch.tensor([len(l) for l in labels])
    feats = nn.utils.rnn.pad_sequence(feats, batch_first=True)
    labels = nn.utils.rnn.pad_sequence(labels, batch_first=True)
    return feats, labels, feat_lens, label_lens


class SpeechRecognitionModel(nn.Module):
    def __init__(self, n_feats, hidden, n_class):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv1d(n_feats, hidden, kernel_size=3, padding=1),
            nn.GELU(),
            nn.Conv1d(hidden, hidden, kernel_size=3, padding=1),
            nn.GELU(),
        )
        self.context = nn.Sequential(
            nn.Conv1d(hidden, hidden, kernel_size=3, padding=2, dilation=2),
            nn.GELU(),
            nn.Conv1d(hidden, hidden, kernel_size=3, padding=4, dilation=4),
            nn.GELU(),
        )
        self.classifier = nn.Linear(hidden, n_class)

    def forward(self, x):  # x: (N, T, F)
        x = self.cnn(x.transpose(1, 2))
        x = x + self.context(x)
        return self.classifier(x.transpose(1, 2))  # (N, T, C)


def greedy_decode(out, lens):
    preds = out.argmax(-1)
    results = []
    for p, L in zip(preds, lens):
        seq, prev = [], 0
        for s in p[:L].tolist():
            if s != prev and s != 0:
                seq.append(s)
            prev = s
        results.append(seq)
    return results


def main():
    g = torch.Generator().manual_seed(1)
    data = [synth_utterance(int(torch.randint(3, 6, (1,), generator=g)), g) for _ in range(192)]
    model = SpeechRecognitionModel(HPARAMS["n_feats"], HPARAMS["hidden"], HPARAMS["n_class"])
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=HPARAMS["lr"])

    for step in range(HPARAMS["steps"]):
        idx = torch.randint(0, len(data), (HPARAMS["batch_size"],))
        feats, labels, feat_lens, label_lens = collate([data[i] for i in idx])
        output = model(feats)
        output = output.transpose(0, 1)  # (T, N, C)
        loss = criterion(output, labels, feat_lens, label_lens)  # BUG-LINE
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        if step % 25 == 0 or step == HPARAMS["steps"] - 1:
            print(f"step {step:4d}  ctc loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        feats, labels, feat_lens, label_lens = collate(data[:32])
        hyps = greedy_decode(model(feats), feat_lens)
        exact = sum(h == l[:n].tolist() for h, l, n in zip(hyps, labels, label_lens))
    print(f"exact-match utterances: {exact}/32")


if __name__ == "__main__":
    main()
