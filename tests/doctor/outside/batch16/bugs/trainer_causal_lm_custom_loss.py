"""Custom HF Trainer subclass that computes the causal-LM loss itself.

The subclass overrides compute_loss, pops the labels (labels == input_ids, as
for any causal LM) and calls cross_entropy on the raw logits against the raw
labels. GPT-2 style models only shift labels inside their own loss; when the
loss is computed outside the model the logits at position t must be compared
with the token at t+1. Without the shift the model is trained to reproduce the
token it is currently reading, which it can do through attention, so the loss
collapses towards zero while nothing about next-token prediction is learned.

Source: https://github.com/tatsu-lab/stanford_alpaca/issues/45
"""

import tempfile

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB = 48
SEQ = 16


class ProgressionData(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        starts = torch.randint(0, VOCAB, (n,), generator=g)
        steps = torch.randint(1, 4, (n,), generator=g)
        pos = torch.arange(SEQ)
        self.ids = (starts[:, None] + steps[:, None] * pos[None, :]) % VOCAB

    def __len__(self):
        return self.ids.shape[0]

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i].clone()}


class LMTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100)  # BUG-LINE
        return (loss, outputs) if return_outputs else loss


def main():
    config = GPT2Config(
        vocab_size=VOCAB, n_positions=SEQ, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0
    )
    model = GPT2LMHeadModel(config)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        learning_rate=3e-3,
        max_steps=40,
        logging_steps=10,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = LMTrainer(model=model, args=args, train_dataset=ProgressionData(512))
    result = trainer.train()
    print("final train loss", result.training_loss)


if __name__ == "__main__":
    main()
