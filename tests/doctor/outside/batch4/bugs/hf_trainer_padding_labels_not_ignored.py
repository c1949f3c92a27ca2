"""SFT with the Hugging Face Trainer: GPT-2 has no pad token, so pad is set to eos, and the custom collator
right-pads each batch and copies ``input_ids`` into ``labels`` without replacing the padding with -100. The
loss is then dominated by predicting long runs of padding/eos tokens; training runs and the loss drops fast
for the wrong reason.

Source: https://github.com/01-ai/Yi/issues/110
"""

import tempfile

import torch
import transformers

transformers.logging.set_verbosity_error()
torch.manual_seed(0)
EOS = 99
config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64, eos_token_id=EOS)
model = transformers.GPT2LMHeadModel(config)
PAD = EOS

examples = []
for _ in range(32):
    n = int(torch.randint(4, 24, ()))
    examples.append({"input_ids": [*torch.randint(0, 98, (n,)).tolist(), EOS]})


def collate(batch):
    width = max(len(b["input_ids"]) for b in batch)
    input_ids = torch.full((len(batch), width), PAD)
    attention_mask = torch.zeros(len(batch), width, dtype=torch.long)
    for row, b in enumerate(batch):
        input_ids[row, : len(b["input_ids"])] = torch.tensor(b["input_ids"])
        attention_mask[row, : len(b["input_ids"])] = 1
    labels = input_ids.clone()  # BUG-LINE
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


with tempfile.TemporaryDirectory() as tmp:
    args = transformers.TrainingArguments(
        output_dir=tmp,
        max_steps=5,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        remove_unused_columns=False,
        use_cpu=True,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=examples, data_collator=collate)
    trainer.train()
