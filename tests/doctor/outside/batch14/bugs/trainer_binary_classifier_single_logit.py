"""Binary text classification with HF Trainer where the model is configured with one output.

For a 0/1 task the model was built with `num_labels=1`, thinking of a single logit. In
transformers a sequence-classification head with num_labels == 1 switches `problem_type` to
"regression": the integer labels are cast to float and the loss is MSE between the raw logit and
0/1, not a classification loss. Nothing errors; the loss decreases, but the objective is
regression on class ids (no sigmoid / cross-entropy), and predictions must be thresholded by hand.

Source: https://openillumi.com/?p=87768
"""

import tempfile

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ = 40, 12


class ToyDataset(torch.utils.data.Dataset):
    def __init__(self, n):
        self.x = torch.randint(3, VOCAB, (n, SEQ))
        self.y = (self.x[:, :4] < 20).sum(1).gt(2).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "attention_mask": torch.ones(SEQ, dtype=torch.long), "labels": self.y[i]}


config = BertConfig(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=SEQ,
    num_labels=1,  # BUG-LINE
)
model = BertForSequenceClassification(config)

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=16,
    max_steps=20,
    learning_rate=2e-3,
    logging_steps=5,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
)
trainer = Trainer(model=model, args=args, train_dataset=ToyDataset(512))
trainer.train()
print("problem_type used by the head:", model.config.problem_type)
