"""HF Trainer subclass overriding compute_loss with a class-weighted cross-entropy.

The override pops the labels, runs the model, computes its own weighted loss
and returns (loss, outputs) when asked; it accepts the extra
num_items_in_batch argument.  The model's built-in loss is intentionally not
used.
Source: https://github.com/huggingface/transformers/pull/7074
"""

import tempfile

import torch
from datasets import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
CLASS_WEIGHTS = torch.tensor([1.0, 3.0])


class WeightedLossTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = torch.nn.functional.cross_entropy(outputs.logits, labels, weight=CLASS_WEIGHTS)
        return (loss, outputs) if return_outputs else loss


ids = torch.randint(1, 100, (32, 12))
ds = Dataset.from_dict(
    {
        "input_ids": ids.tolist(),
        "attention_mask": torch.ones_like(ids).tolist(),
        "labels": (ids[:, 0] > 70).long().tolist(),
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
        learning_rate=1e-3,
    )
    result = WeightedLossTrainer(model=model, args=args, train_dataset=ds).train()
print(f"train loss {result.training_loss:.4f}")
