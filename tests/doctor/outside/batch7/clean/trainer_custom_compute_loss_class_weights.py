"""HF Trainer subclass overriding compute_loss to use a class-weighted
cross-entropy for an imbalanced classification task. The labels are popped from
the inputs, the model returns logits, and the weighted loss is returned (with the
outputs when requested), which is the documented way to customise the loss.

Source: https://huggingface.co/docs/transformers/main_classes/trainer
"""

import tempfile

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
cfg = BertConfig(
    vocab_size=80,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=32,
    num_labels=2,
)
model = BertForSequenceClassification(cfg)


class ToyData(torch.utils.data.Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        ids = torch.randint(1, 80, (12,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "attention_mask": torch.ones(12, dtype=torch.long), "labels": int(i % 5 == 0)}


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        weight = torch.tensor([1.0, 4.0], device=outputs.logits.device)
        loss = torch.nn.functional.cross_entropy(outputs.logits, labels, weight=weight)
        return (loss, outputs) if return_outputs else loss


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
    WeightedTrainer(model=model, args=args, train_dataset=ToyData()).train()
print("done")
