"""Per-example loss weights silently removed by Trainer's remove_unused_columns.

The dataset carries a "weight" column consumed in a custom compute_loss.  With
the default remove_unused_columns=True the Trainer deletes every column that is
not an argument of model.forward, so "weight" never reaches compute_loss, the
.get() fallback kicks in and training is unweighted without any error.
Source: https://github.com/huggingface/transformers/issues/25054
"""

import tempfile

import torch
from datasets import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
seen = []


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        weight = inputs.pop("weight", None)
        seen.append(weight is not None)
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        per_ex = torch.nn.functional.cross_entropy(outputs.logits, labels, reduction="none")
        w = weight if weight is not None else torch.ones_like(per_ex)
        loss = (per_ex * w).sum() / w.sum()
        return (loss, outputs) if return_outputs else loss


n = 32
ids = torch.randint(1, 100, (n, 12))
ds = Dataset.from_dict(
    {
        "input_ids": ids.tolist(),
        "labels": (ids[:, 0] > 50).long().tolist(),
        "weight": [5.0 if i % 4 == 0 else 1.0 for i in range(n)],
    }
)
config = BertConfig(
    vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, num_labels=2
)
model = BertForSequenceClassification(config)
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(
        output_dir=out,
        max_steps=6,
        per_device_train_batch_size=8,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        remove_unused_columns=True,  # BUG-LINE
    )
    WeightedTrainer(model=model, args=args, train_dataset=ds).train()
print(f"steps where weights reached compute_loss: {sum(seen)}/{len(seen)}")
