"""HF Trainer with a custom compute_loss (class-weighted cross-entropy), a partly frozen BERT
encoder and gradient accumulation.

Unusual but correct: the Trainer subclass overrides `compute_loss` to apply class weights for an
imbalanced 3-class problem (the pattern shown in the Trainer docs), the embeddings and the first
encoder layer are frozen on purpose before the Trainer builds its optimizer (it only optimises
parameters with requires_grad), and `gradient_accumulation_steps=2` is handled by the Trainer,
which passes `num_items_in_batch` to compute_loss; the override normalises the summed weighted
loss by it, so the accumulated gradient equals that of one large batch.

Source: https://github.com/huggingface/transformers/pull/15070
"""

import tempfile

import torch
import torch.nn as nn
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)
VOCAB, SEQ = 40, 10


class Imbalanced(torch.utils.data.Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randint(3, VOCAB, (n, SEQ), generator=g)
        s = self.x[:, 0]
        self.y = torch.where(s < 28, 0, torch.where(s < 35, 1, 2))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.y[i]}


train = Imbalanced(384)
counts = torch.bincount(train.y, minlength=3).float()
class_weights = counts.sum() / (3 * counts)


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        weight = class_weights.to(outputs.logits.device)
        if num_items_in_batch is not None:
            loss = nn.functional.cross_entropy(outputs.logits, labels, weight=weight, reduction="sum")
            loss = loss / num_items_in_batch
        else:
            loss = nn.functional.cross_entropy(outputs.logits, labels, weight=weight)
        return (loss, outputs) if return_outputs else loss


model = BertForSequenceClassification(
    BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=SEQ,
        num_labels=3,
    )
)
model.bert.embeddings.requires_grad_(False)
model.bert.encoder.layer[0].requires_grad_(False)

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=16,
    gradient_accumulation_steps=2,
    max_steps=20,
    learning_rate=3e-3,
    warmup_steps=3,
    logging_steps=5,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
)
trainer = WeightedTrainer(model=model, args=args, train_dataset=train)
trainer.train()
print("class weights:", [round(w, 3) for w in class_weights.tolist()])
