"""Knowledge distillation of a tiny BERT student from a frozen tiny BERT teacher with HF Trainer.

Unusual but correct: a Trainer subclass overrides compute_loss. The teacher is trained
briefly first, then frozen (eval mode, requires_grad False, forward under no_grad); the
loss mixes hard-label cross-entropy with KL(teacher || student) computed on temperature-
softened probabilities, scaled by T^2. Only the student is handed to the Trainer, so only
its parameters are in the optimizer.

Source: https://github.com/huggingface/transformers/pull/25619
"""

import tempfile

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)


class Data(torch.utils.data.Dataset):
    def __init__(self, n=256, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 50, (n, 10), generator=g)
        self.ids[:, 0] = 2
        self.y = torch.randint(0, 3, (n,), generator=g)
        self.ids[torch.arange(n), torch.randint(1, 10, (n,), generator=g)] = 30 + self.y  # class marker

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.y[i]}


def bert(hidden, layers):
    return BertForSequenceClassification(
        BertConfig(
            vocab_size=50,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=4,
            intermediate_size=2 * hidden,
            max_position_embeddings=16,
            num_labels=3,
        )
    )


class DistilTrainer(Trainer):
    def __init__(self, *args, teacher=None, temperature=2.0, alpha=0.5, **kw):
        super().__init__(*args, **kw)
        self.teacher, self.T, self.alpha = teacher, temperature, alpha

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        out = model(**inputs)
        with torch.no_grad():
            t_logits = self.teacher(**inputs).logits
        hard = F.cross_entropy(out.logits, labels)
        soft = (
            F.kl_div(
                F.log_softmax(out.logits / self.T, dim=-1), F.softmax(t_logits / self.T, dim=-1), reduction="batchmean"
            )
            * self.T**2
        )
        loss = self.alpha * hard + (1 - self.alpha) * soft
        return (loss, out) if return_outputs else loss


class Log(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            print(f"step {state.global_step:3d}  loss {logs['loss']:.4f}")


def main():
    ds = Data()
    teacher = bert(64, 2)
    t_opt = torch.optim.AdamW(teacher.parameters(), lr=2e-3)
    for i in range(50):
        idx = torch.randint(0, len(ds), (16,))
        loss = F.cross_entropy(teacher(input_ids=ds.ids[idx]).logits, ds.y[idx])
        t_opt.zero_grad()
        loss.backward()
        t_opt.step()
    print(f"teacher loss {loss.item():.4f}")
    teacher.eval()
    teacher.requires_grad_(False)

    student = bert(48, 2)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        max_steps=50,
        learning_rate=5e-3,
        logging_steps=10,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    DistilTrainer(model=student, args=args, train_dataset=ds, teacher=teacher, callbacks=[Log()]).train()


if __name__ == "__main__":
    main()
