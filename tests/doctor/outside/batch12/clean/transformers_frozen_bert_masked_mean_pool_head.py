"""Trains only a small classification head on top of a frozen BERT encoder (built from a config) in a hand-written
PyTorch loop, on a synthetic sentiment task whose sentences have very different lengths. Sentences are tokenised
by a word-level tokenizer wrapped in PreTrainedTokenizerFast and padded per batch; the encoder runs under
`torch.no_grad()` and stays in eval mode for the whole run (its dropout is off even while the head is in train
mode), and the sentence vector is the attention-mask-weighted mean of the token states, so padded positions
contribute nothing and short sentences are not diluted by padding. Only the head's parameters are given to the
optimizer. The encoder that never receives gradients, the mixed train/eval modes and the pooling that ignores
BERT's own pooler output are intended.

Source: https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

torch.manual_seed(0)
random.seed(0)

POS = ["good", "great", "fine", "lovely", "superb", "happy"]
NEG = ["bad", "awful", "poor", "sad", "terrible", "ugly"]
FILL = ["the", "a", "movie", "plot", "was", "and", "very", "actor", "scene", "really", "it", "quite"]


def build_tokenizer():
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for w in POS + NEG + FILL:
        vocab[w] = len(vocab)
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
    )


def make_sentences(n, rng):
    data = []
    for _ in range(n):
        label = rng.randint(0, 1)
        strong, weak = (POS, NEG) if label == 1 else (NEG, POS)
        words = (
            rng.choices(FILL, k=rng.randint(1, 20))
            + rng.choices(strong, k=rng.randint(2, 4))
            + rng.choices(weak, k=rng.randint(0, 1))
        )
        rng.shuffle(words)
        data.append((" ".join(words), label))
    return data


def masked_mean(hidden, mask):
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)


def main():
    tok = build_tokenizer()
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=32,
        pad_token_id=tok.pad_token_id,
    )
    encoder = BertModel(config)
    encoder.eval()
    encoder.requires_grad_(False)

    head = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Dropout(0.1), nn.Linear(64, 2))
    opt = torch.optim.AdamW(head.parameters(), lr=5e-3)

    rng = random.Random(1)
    train, held_out = make_sentences(640, rng), make_sentences(200, rng)

    def encode(rows):
        batch = tok([r[0] for r in rows], padding=True, return_tensors="pt", return_token_type_ids=False)
        with torch.no_grad():
            hidden = encoder(**batch).last_hidden_state
        return masked_mean(hidden, batch["attention_mask"]), torch.tensor([r[1] for r in rows])

    for step in range(40):
        rows = train[(step * 32) % len(train) : (step * 32) % len(train) + 32]
        feats, y = encode(rows)
        head.train()
        loss = F.cross_entropy(head(feats), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print("step", step, "loss", round(loss.item(), 4))

    head.eval()
    with torch.no_grad():
        feats, y = encode(held_out)
        print("held-out accuracy", round((head(feats).argmax(1) == y).float().mean().item(), 3))
    print("encoder has grads:", any(p.grad is not None for p in encoder.parameters()))


if __name__ == "__main__":
    main()
