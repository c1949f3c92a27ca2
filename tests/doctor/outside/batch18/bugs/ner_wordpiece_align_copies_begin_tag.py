"""BERT token-classification fine-tune whose label alignment copies B- tags onto sub-words.

Source: https://github.com/huggingface/notebooks/issues/250

``tokenize_and_align_labels`` labels every word piece (``label_all_tokens=True``)
but copies the word's own tag to its continuation pieces.  For a word tagged
``B-PER`` split into ``zar ##kon`` the labels become ``B-PER B-PER`` instead of
``B-PER I-PER``.  The model is trained to open a new entity on every
continuation piece; token accuracy against these labels looks excellent, but
the decoded entity spans are fragmented.
"""

import random

import torch
from transformers import BertConfig, BertForTokenClassification, BertTokenizerFast

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)

LABELS = ["O", "B-PER", "I-PER"]
B_TO_I = {0: 0, 1: 2, 2: 2}
FILLER = ["the", "a", "met", "saw", "with", "at", "home", "today", "and", "city", "went", "left"]
SYLL = ["zar", "mol", "tek", "ban", "qui", "rho", "vel", "dun"]
ALIGN_CFG = {"label_all_tokens": True, "max_length": 32}


def build_tokenizer():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + FILLER + SYLL + ["##" + s for s in SYLL]
    return BertTokenizerFast(vocab={tok: i for i, tok in enumerate(vocab)}, do_lower_case=True)


def sample_sentence():
    words, tags = [], []
    for _ in range(random.randint(4, 8)):
        if random.random() < 0.3:
            for j in range(random.randint(1, 2)):
                words.append("".join(random.choice(SYLL) for _ in range(random.randint(2, 3))))
                tags.append(1 if j == 0 else 2)
        else:
            words.append(random.choice(FILLER))
            tags.append(0)
    return words, tags


def tokenize_and_align_labels(tokenizer, batch_words, batch_tags, cfg):
    enc = tokenizer(
        batch_words,
        is_split_into_words=True,
        truncation=True,
        max_length=cfg["max_length"],
        padding=True,
        return_tensors="pt",
    )
    all_labels = []
    for i, tags in enumerate(batch_tags):
        prev, labels = None, []
        for w in enc.word_ids(batch_index=i):
            if w is None:
                labels.append(-100)
            elif w != prev:
                labels.append(tags[w])
            else:
                labels.append(tags[w] if cfg["label_all_tokens"] else -100)  # BUG-LINE
            prev = w
        all_labels.append(labels)
    enc["labels"] = torch.tensor(all_labels)
    return enc


def main():
    tok = build_tokenizer()
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=64,
        num_labels=len(LABELS),
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = BertForTokenClassification(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(50):
        sents = [sample_sentence() for _ in range(16)]
        batch = tokenize_and_align_labels(tok, [s[0] for s in sents], [s[1] for s in sents], ALIGN_CFG)
        out = model(**batch)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 10 == 0 or step == 49:
            keep = batch["labels"] != -100
            acc = (out.logits.argmax(-1)[keep] == batch["labels"][keep]).float().mean().item()
            print(f"step {step:3d} loss {out.loss.item():.4f} token-acc {acc:.3f}")


if __name__ == "__main__":
    main()
