"""Tiny BERT token classifier trained with HF Trainer; labels only on the first sub-token of each word.

Unusual but correct: words are split into several sub-tokens by a locally built WordPiece-
like vocabulary; [CLS]/[SEP], padding and continuation pieces get label -100, which the
model's cross-entropy ignores, and the padding collator pads labels with -100 too. The
metric computed at the end also skips -100 positions.

Source: https://discuss.huggingface.co/t/will-trainer-loss-functions-automatically-ignore-100/36134
"""

import tempfile

import torch
from transformers import BertConfig, BertForTokenClassification, Trainer, TrainerCallback, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, CLS, SEP = 0, 1, 2
N_WORDS = 20  # word w has pieces 3+2w (head) and 4+2w (continuation)
VOCAB = 3 + 2 * N_WORDS


class TaggingData(torch.utils.data.Dataset):
    def __init__(self, n=256, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.rows = []
        for _ in range(n):
            words = torch.randint(0, N_WORDS, (int(torch.randint(3, 7, (1,), generator=g)),), generator=g)
            ids, labels = [CLS], [-100]
            for w in words.tolist():
                tag = 1 if w >= N_WORDS // 2 else 0
                ids.append(3 + 2 * w)
                labels.append(tag)
                if w % 3 == 0:  # split words get a continuation piece
                    ids.append(4 + 2 * w)
                    labels.append(-100)
            ids.append(SEP)
            labels.append(-100)
            self.rows.append((ids, labels))

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids, labels = self.rows[i]
        return {"input_ids": ids, "labels": labels}


def collate(features):
    T = max(len(f["input_ids"]) for f in features)
    ids = torch.full((len(features), T), PAD)
    labels = torch.full((len(features), T), -100)
    for i, f in enumerate(features):
        ids[i, : len(f["input_ids"])] = torch.tensor(f["input_ids"])
        labels[i, : len(f["labels"])] = torch.tensor(f["labels"])
    return {"input_ids": ids, "attention_mask": (ids != PAD).long(), "labels": labels}


class Log(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            print(f"step {state.global_step:3d}  loss {logs['loss']:.4f}")


def main():
    cfg = BertConfig(
        vocab_size=VOCAB,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=32,
        num_labels=2,
        pad_token_id=PAD,
    )
    model = BertForTokenClassification(cfg)
    ds = TaggingData()
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        max_steps=40,
        learning_rate=3e-3,
        logging_steps=10,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=collate, callbacks=[Log()])
    trainer.train()
    batch = collate([ds[i] for i in range(64)])
    model.eval()
    with torch.no_grad():
        pred = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.argmax(-1)
    keep = batch["labels"] != -100
    print(f"word-level accuracy {(pred[keep] == batch['labels'][keep]).float().mean():.3f}")


if __name__ == "__main__":
    main()
