"""A Trainer subclass computes its own causal-LM loss from ``inputs["input_ids"]`` as the labels (shifted by
hand), ignoring the ``labels`` the collator built with -100 on the padding: every padded position is trained to
predict the pad token, the loss falls fast on the easy pad tokens and the model learns to emit padding.

Source: https://github.com/state-spaces/mamba/issues/24
"""

import tempfile

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
PAD = 63
cfg = GPT2Config(vocab_size=64, n_positions=24, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=1)


def collate(rows):
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), PAD)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
    return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}


class LMTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        input_ids = inputs.pop("input_ids")
        inputs.pop("labels")
        logits = model(input_ids=input_ids, attention_mask=inputs["attention_mask"]).logits
        labels = input_ids  # BUG-LINE
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


g = torch.Generator().manual_seed(0)
rows = [[*torch.randint(2, 60, (int(n),), generator=g).tolist(), 1] for n in torch.randint(4, 20, (64,), generator=g)]
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(), max_steps=8, per_device_train_batch_size=8, learning_rate=5e-4,
    report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True, remove_unused_columns=False,
)  # fmt: skip
LMTrainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=rows, data_collator=collate).train()
