"""Gradual unfreezing of a BERT classifier through a TrainerCallback.

The encoder is frozen before the Trainer is built so that only the
classification head trains during the first steps; a callback then sets
requires_grad=True on the encoder at step 15 to fine-tune the whole model.
The Trainer creates its optimizer once, from the parameters that require
grad at that moment, so the encoder weights were never put in any parameter
group. After the "unfreeze" the encoder receives gradients but the optimizer
never applies them: the backbone stays at its initial values for the whole
run and only the head is trained, with no error or warning.

Source: https://github.com/facebookresearch/detectron2/issues/2486
"""

import tempfile

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB = 40
SEQ = 12
UNFREEZE_AT = 15


class ParityData(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(3)
        self.ids = torch.randint(5, VOCAB, (n, SEQ), generator=g)
        self.ids[:, 0] = 2
        self.labels = ((self.ids[:, 1:4] > 22).sum(1) >= 2).long()

    def __len__(self):
        return self.ids.shape[0]

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(SEQ, dtype=torch.long), "labels": self.labels[i]}


class UnfreezeCallback(TrainerCallback):
    def __init__(self, model, step):
        self.model = model
        self.step = step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            for p in self.model.bert.parameters():
                p.requires_grad = True  # BUG-LINE
            print("unfroze encoder at step", state.global_step)


def main():
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=SEQ,
        num_labels=2,
    )
    model = BertForSequenceClassification(config)
    for p in model.bert.parameters():
        p.requires_grad = False

    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        learning_rate=2e-3,
        max_steps=45,
        logging_steps=5,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=model, args=args, train_dataset=ParityData(480), callbacks=[UnfreezeCallback(model, UNFREEZE_AT)]
    )
    result = trainer.train()
    print("final train loss", result.training_loss)


if __name__ == "__main__":
    main()
