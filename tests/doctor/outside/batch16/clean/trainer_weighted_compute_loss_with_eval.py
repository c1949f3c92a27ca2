"""HF Trainer subclass with a class-weighted compute_loss and evaluation during training.

Unusual but correct: compute_loss is overridden with the current signature
(num_items_in_batch accepted), pops the labels, calls the model without them
and applies a class-weighted cross-entropy for an imbalanced 3-class task; it
returns (loss, outputs) when return_outputs=True so that evaluation
(eval_strategy="steps") also reports the weighted eval_loss. No gradient
accumulation is used, so the per-batch mean is the right normalisation.

Source: https://github.com/huggingface/transformers/issues/36331
"""

import tempfile

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ = 40, 10


class Imbalanced(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        u = torch.rand(n, generator=g)
        self.labels = torch.where(u < 0.7, 0, torch.where(u < 0.9, 1, 2))
        lo = torch.tensor([5, 17, 29])[self.labels]
        self.ids = lo[:, None] + torch.randint(0, 11, (n, SEQ), generator=g)
        self.ids[:, 0] = 2

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


class WeightedTrainer(Trainer):
    def __init__(self, *args, class_weights=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.class_weights = class_weights

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits
        loss = F.cross_entropy(logits, labels, weight=self.class_weights.to(logits.device))
        return (loss, outputs) if return_outputs else loss


def main():
    train_ds, eval_ds = Imbalanced(480, 0), Imbalanced(96, 1)
    counts = torch.bincount(train_ds.labels, minlength=3).float()
    weights = counts.sum() / (3 * counts)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=SEQ,
        num_labels=3,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = BertForSequenceClassification(config)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        per_device_eval_batch_size=32,
        learning_rate=2e-3,
        lr_scheduler_type="constant",
        max_steps=40,
        logging_steps=10,
        eval_strategy="steps",
        eval_steps=20,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = WeightedTrainer(
        model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds, class_weights=weights
    )
    trainer.train()
    print("final eval", trainer.evaluate())


if __name__ == "__main__":
    main()
