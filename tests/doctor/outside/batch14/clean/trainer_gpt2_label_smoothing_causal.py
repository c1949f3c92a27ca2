"""HF Trainer causal-LM training of a tiny GPT-2 with label smoothing enabled.

Unusual but correct: `label_smoothing_factor=0.1` makes the Trainer pop the labels and compute
the loss itself with its LabelSmoother instead of the model's internal loss. For causal-LM
models the Trainer passes `shift_labels=True`, so the smoothed loss is computed on the same
next-token alignment as the model's own loss (the fix for the misalignment reported when label
smoothing was combined with GPT-2). Labels are input_ids with padding set to -100.

Source: https://github.com/huggingface/transformers/pull/17987
"""

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ, PAD = 24, 16, 0


class CountingData(torch.utils.data.Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.items = []
        for _ in range(n):
            start = int(torch.randint(1, 12, (1,), generator=g))
            length = int(torch.randint(8, SEQ + 1, (1,), generator=g))
            ids = torch.full((SEQ,), PAD, dtype=torch.long)
            ids[:length] = (torch.arange(length) + start) % (VOCAB - 1) + 1
            mask = (ids != PAD).long()
            labels = ids.masked_fill(mask == 0, -100)
            self.items.append({"input_ids": ids, "attention_mask": mask, "labels": labels})

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


model = GPT2LMHeadModel(
    GPT2Config(
        vocab_size=VOCAB,
        n_positions=SEQ,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=PAD,
    )
)
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=16,
    max_steps=30,
    learning_rate=3e-3,
    label_smoothing_factor=0.1,
    logging_steps=10,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
)
trainer = Trainer(model=model, args=args, train_dataset=CountingData(256))
trainer.train()

model.eval()
with torch.no_grad():
    eval_data = CountingData(32)
    batch = [eval_data[i] for i in range(32)]
    ids = torch.stack([b["input_ids"] for b in batch])
    labels = torch.stack([b["labels"] for b in batch])
    pred = model(input_ids=ids, attention_mask=(ids != PAD).long()).logits.argmax(-1)[:, :-1]
    tgt = labels[:, 1:]
    keep = tgt != -100
    print(f"next-token accuracy: {(pred[keep] == tgt[keep]).float().mean().item():.3f}")
