"""Trains a tiny BERT token tagger with the Hugging Face Trainer on a synthetic entity-tagging task whose
sentences have very different lengths, using gradient accumulation over 3 micro-batches. The loss is supplied
through Trainer's `compute_loss_func` hook: it sums the token cross-entropy (ignoring -100 padding labels) and
divides by `num_items_in_batch`, the number of labelled tokens in the whole accumulated batch that Trainer counts
before the micro-batches are run. Because the loss is already normalised over the full accumulation window,
Trainer does not divide it again by the number of accumulation steps, so every labelled token gets the same
weight no matter which micro-batch it lands in (a plain per-micro-batch mean would over-weight tokens in short
micro-batches). The `reduction="sum"` and the missing division by the accumulation steps are deliberate.

Source: https://huggingface.co/blog/gradient_accumulation
"""

import tempfile

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForTokenClassification, Trainer, TrainingArguments

torch.manual_seed(0)

VOCAB = 40
PAD = 0
NUM_TAGS = 3


def tag_of(tok):
    if 5 <= tok < 15:
        return 1
    if 15 <= tok < 20:
        return 2
    return 0


class TaggingData(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.items = []
        for _ in range(n):
            length = int(torch.randint(3, 30, (1,), generator=g))
            ids = torch.randint(1, VOCAB, (length,), generator=g)
            tags = torch.tensor([tag_of(int(t)) for t in ids])
            self.items.append({"input_ids": ids, "labels": tags})

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def pad_collate(features):
    longest = max(len(f["input_ids"]) for f in features)
    ids = torch.full((len(features), longest), PAD, dtype=torch.long)
    mask = torch.zeros((len(features), longest), dtype=torch.long)
    labels = torch.full((len(features), longest), -100, dtype=torch.long)
    for row, f in enumerate(features):
        n = len(f["input_ids"])
        ids[row, :n] = f["input_ids"]
        mask[row, :n] = 1
        labels[row, :n] = f["labels"]
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def token_sum_loss(outputs, labels, num_items_in_batch=None):
    logits = outputs["logits"]
    total = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100, reduction="sum")
    if num_items_in_batch is None:
        num_items_in_batch = labels.ne(-100).sum()
    return total / num_items_in_batch


def main():
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=64,
        num_labels=NUM_TAGS,
        pad_token_id=PAD,
    )
    model = BertForTokenClassification(config)
    train = TaggingData(96, seed=1)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=4,
            gradient_accumulation_steps=3,
            max_steps=7,
            learning_rate=1e-3,
            logging_steps=2,
            report_to=[],
            save_strategy="no",
            use_cpu=True,
            seed=0,
            dataloader_num_workers=0,
            disable_tqdm=True,
        )
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=train,
            data_collator=pad_collate,
            compute_loss_func=token_sum_loss,
        )
        result = trainer.train()
    print("final train loss", round(result.training_loss, 4))


if __name__ == "__main__":
    main()
