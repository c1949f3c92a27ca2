"""Tiny T5 trained with the Hugging Face Trainer to reverse variable-length digit strings.

The custom collator pads the target sequences with the tokenizer's pad id (0 for T5)
instead of -100. T5 computes its loss with CrossEntropyLoss(ignore_index=-100), so
every padding position becomes a training target: a large share of the loss is the
trivially easy "predict <pad> after </s>" task, the reported loss is dominated by
it and the gradient signal for the real tokens is diluted. Training finishes
without any warning.

Source: https://github.com/huggingface/transformers/issues/6238
"""

import random
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import T5Config, T5ForConditionalGeneration, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)

PAD, EOS, OFFSET, NDIG, MAXLEN = 0, 1, 2, 10, 10


class ReverseDigits(Dataset):
    def __init__(self, n):
        self.items = []
        for _ in range(n):
            length = random.randint(2, MAXLEN - 1)
            digits = [random.randrange(NDIG) + OFFSET for _ in range(length)]
            self.items.append((digits + [EOS], digits[::-1] + [EOS]))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(batch):
    src_len = max(len(s) for s, _ in batch)
    tgt_len = MAXLEN + 1
    input_ids = torch.full((len(batch), src_len), PAD)
    attention_mask = torch.zeros((len(batch), src_len), dtype=torch.long)
    labels = torch.full((len(batch), tgt_len), PAD)  # BUG-LINE
    for i, (s, t) in enumerate(batch):
        input_ids[i, : len(s)] = torch.tensor(s)
        attention_mask[i, : len(s)] = 1
        labels[i, : len(t)] = torch.tensor(t)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


cfg = T5Config(
    vocab_size=NDIG + OFFSET,
    d_model=64,
    d_kv=16,
    d_ff=128,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=4,
    dropout_rate=0.0,
    pad_token_id=PAD,
    eos_token_id=EOS,
    decoder_start_token_id=PAD,
)
model = T5ForConditionalGeneration(cfg)

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=24,
    learning_rate=3e-3,
    max_steps=60,
    logging_steps=20,
    save_strategy="no",
    report_to=[],
    use_cpu=True,
    dataloader_num_workers=0,
    disable_tqdm=True,
    seed=0,
)
trainer = Trainer(model=model, args=args, train_dataset=ReverseDigits(1024), data_collator=collate)
result = trainer.train()
print(f"final train loss {result.training_loss:.4f}")
