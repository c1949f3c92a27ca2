"""For causal-LM fine-tuning the pad token is set to the EOS token and the collator
(like DataCollatorForLanguageModeling(mlm=False)) replaces every pad id in the
labels with -100. Because pad == eos, the real end-of-sequence tokens are masked
out of the loss too, so the model never receives a training signal to emit EOS
and later generates without stopping.

Source: https://github.com/mlabonne/llm-course/issues/33
"""

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
EOS = 49
PAD = EOS  # BUG-LINE
cfg = GPT2Config(vocab_size=50, n_positions=32, n_embd=32, n_layer=2, n_head=2, eos_token_id=EOS)
model = GPT2LMHeadModel(cfg)


class ToyData(torch.utils.data.Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        n = 4 + i % 8
        return {"input_ids": [1 + (i + k) % 40 for k in range(n)] + [EOS]}


def collate(examples):
    longest = max(len(e["input_ids"]) for e in examples)
    ids = torch.full((len(examples), longest), PAD)
    mask = torch.zeros_like(ids)
    for r, e in enumerate(examples):
        ids[r, : len(e["input_ids"])] = torch.tensor(e["input_ids"])
        mask[r, : len(e["input_ids"])] = 1
    labels = ids.clone()
    labels[labels == PAD] = -100
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


with tempfile.TemporaryDirectory() as tmp:
    args = TrainingArguments(
        output_dir=tmp,
        max_steps=6,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        report_to=[],
        use_cpu=True,
        logging_steps=100,
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=ToyData(), data_collator=collate)
    trainer.train()
print("done")
