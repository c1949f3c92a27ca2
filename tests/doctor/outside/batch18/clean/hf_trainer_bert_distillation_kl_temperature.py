"""HF Trainer subclass distilling a frozen BERT teacher into a smaller BERT student.

Source: https://github.com/huggingface/transformers/pull/25182

Follows the distillation recipe reviewed in the PR: ``compute_loss`` runs the
frozen teacher under ``no_grad``, and the student is trained on
``KLDivLoss(log_softmax(student/T), softmax(teacher/T)) * T**2`` mixed with the
ordinary cross-entropy.  The KL input is log-probabilities and the target is
probabilities, as ``KLDivLoss`` expects.  Unusual parts: a second model living
inside the Trainer that is never optimised, a loss on probabilities, and a
teacher trained in a short first phase of the same script.
"""

import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ, KEY_A, KEY_B = 50, 16, 5, 6


class KeywordData(Dataset):
    """label 0: neither key, 1: KEY_A only, 2: KEY_B present"""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(10, VOCAB, (n, SEQ), generator=g)
        self.y = torch.randint(0, 3, (n,), generator=g)
        pos = torch.randint(1, SEQ, (n,), generator=g)
        self.ids[:, 0] = 2
        self.ids[self.y == 1, pos[self.y == 1]] = KEY_A
        self.ids[self.y == 2, pos[self.y == 2]] = KEY_B

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(SEQ, dtype=torch.long), "labels": self.y[i]}


def bert(hidden, layers):
    return BertForSequenceClassification(
        BertConfig(
            vocab_size=VOCAB,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=4,
            intermediate_size=2 * hidden,
            max_position_embeddings=32,
            num_labels=3,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    )


class DistilTrainer(Trainer):
    def __init__(self, *args, teacher=None, temperature=2.0, alpha=0.5, **kwargs):
        super().__init__(*args, **kwargs)
        self.teacher = teacher.eval()
        self.temperature, self.alpha = temperature, alpha

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        out = model(**inputs)
        with torch.no_grad():
            t_logits = self.teacher(**inputs).logits
        T = self.temperature
        kd = nn.KLDivLoss(reduction="batchmean")(F.log_softmax(out.logits / T, -1), F.softmax(t_logits / T, -1)) * T * T
        loss = self.alpha * kd + (1 - self.alpha) * out.loss
        return (loss, out) if return_outputs else loss


def main():
    data = KeywordData(512, seed=0)
    teacher = bert(64, 2)
    opt = torch.optim.AdamW(teacher.parameters(), lr=2e-3)
    loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)
    for epoch in range(2):
        for batch in loader:
            loss = teacher(**batch).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[teacher] epoch {epoch} loss {loss.item():.4f}")
    teacher.requires_grad_(False)

    student = bert(48, 1)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=32,
        max_steps=40,
        learning_rate=5e-3,
        logging_steps=10,
        report_to=[],
        lr_scheduler_type="constant",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = DistilTrainer(model=student, args=args, train_dataset=data, teacher=teacher)
    trainer.train()


if __name__ == "__main__":
    main()
