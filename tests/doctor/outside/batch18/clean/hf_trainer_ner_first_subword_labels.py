"""HF Trainer NER fine-tune that labels only the first word piece of each word.

Source: https://github.com/liuyukid/transformers-ner/issues/5

The issue asks whether word-level tags stay aligned once words are split into
word pieces; the answer is that only the first piece of each word carries the
word's tag and the continuation pieces are excluded from the loss.  Here the
alignment uses ``word_ids()``: first piece -> word tag, continuation pieces and
special tokens -> -100, and ``DataCollatorForTokenClassification`` pads labels
with -100.  Unusual parts: a WordPiece vocabulary built on the fly, labels
that are sparser than the inputs, and ignore-index masks from the collator.
"""

import random
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import (
    BertConfig,
    BertForTokenClassification,
    BertTokenizerFast,
    DataCollatorForTokenClassification,
    Trainer,
    TrainingArguments,
)

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)

LABELS = ["O", "B-PER", "I-PER"]
FILLER = ["the", "a", "met", "saw", "with", "at", "home", "today", "and", "city", "went", "left"]
SYLL = ["zar", "mol", "tek", "ban", "qui", "rho", "vel", "dun"]


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


class NERData(Dataset):
    def __init__(self, tok, n):
        self.items = []
        for _ in range(n):
            words, tags = sample_sentence()
            enc = tok(words, is_split_into_words=True, truncation=True, max_length=32)
            labels, prev = [], None
            for w in enc.word_ids():
                labels.append(-100 if w is None or w == prev else tags[w])
                prev = w
            enc["labels"] = labels
            self.items.append(dict(enc))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


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
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        max_steps=40,
        learning_rate=3e-3,
        logging_steps=10,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        lr_scheduler_type="constant",
    )
    trainer = Trainer(
        model=model, args=args, train_dataset=NERData(tok, 400), data_collator=DataCollatorForTokenClassification(tok)
    )
    trainer.train()


if __name__ == "__main__":
    main()
