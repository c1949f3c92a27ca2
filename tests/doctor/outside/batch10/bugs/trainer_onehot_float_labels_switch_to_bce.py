"""Fine-tunes a tiny BERT 3-way topic classifier (built from a config) with the Hugging Face
Trainer. The labels were stored one-hot as floats (as exported from a spreadsheet). Because the
config has no problem_type, BertForSequenceClassification infers it from the label dtype/shape:
float labels with num_labels > 1 select "multi_label_classification", i.e. independent sigmoids
with BCEWithLogitsLoss instead of the intended softmax cross-entropy over mutually exclusive
classes. Training runs, the loss decreases, and no warning is shown; the model is just optimizing
a different objective (its class scores are not a distribution and are poorly calibrated).

Source: https://github.com/activetigger/activetigger/issues/1030
"""

import tempfile

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
V, T, C = 30, 10, 3
cfg = BertConfig(
    vocab_size=V,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=T,
    num_labels=C,
)
model = BertForSequenceClassification(cfg)


class Topics(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(1, V, (n, T), generator=g)
        self.cls = self.ids[:, 2] % C
        self.onehot = torch.nn.functional.one_hot(self.cls, C).float()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.onehot[i]}  # BUG-LINE


with tempfile.TemporaryDirectory() as out_dir:
    args = TrainingArguments(
        output_dir=out_dir,
        max_steps=12,
        per_device_train_batch_size=16,
        learning_rate=2e-3,
        report_to=[],
        logging_steps=4,
        save_strategy="no",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=Topics(256))
    result = trainer.train()
print(f"train loss {result.training_loss:.4f} problem_type {model.config.problem_type}")
