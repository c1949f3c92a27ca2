"""HF Trainer with a callback that freezes the embeddings and first layer part-way through.

Unusual but correct: a TrainerCallback sets requires_grad=False on the
embedding block and the first encoder layer at step 20 (train everything
first, then only the upper layers). Freezing after the optimizer was built
is safe here: the frozen tensors stop receiving .grad (the Trainer zeroes
grads with set_to_none), and AdamW skips parameters whose grad is None, so
they stay fixed from that step on. The frozen modules contain no
BatchNorm-style running statistics, so train() mode does not change them.

Source: https://github.com/huggingface/transformers/issues/24479
"""

import tempfile

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ, FREEZE_AT = 40, 10, 20


class TokenData(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.labels = torch.randint(0, 2, (n,), generator=g)
        self.ids = 5 + 17 * self.labels[:, None] + torch.randint(0, 18, (n, SEQ), generator=g)
        self.ids[:, 0] = 2

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


class FreezeLowerLayers(TrainerCallback):
    def __init__(self, model):
        self.model = model

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == FREEZE_AT:
            for module in (self.model.bert.embeddings, self.model.bert.encoder.layer[0]):
                for p in module.parameters():
                    p.requires_grad = False
            print("froze embeddings and layer 0 at step", state.global_step)


def main():
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=SEQ,
        num_labels=2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = BertForSequenceClassification(config)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        learning_rate=2e-3,
        lr_scheduler_type="constant",
        max_steps=45,
        logging_steps=5,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=TokenData(480), callbacks=[FreezeLowerLayers(model)])
    result = trainer.train()
    print("final train loss", result.training_loss)


if __name__ == "__main__":
    main()
