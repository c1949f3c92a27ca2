"""Tiny BERT classifier fine-tuned with AdamW + get_linear_schedule_with_warmup over epochs.

The schedule's total length is given in the wrong unit: the number of epochs is passed as
num_training_steps, while scheduler.step() is called once per batch. After a couple of
warmup steps the linear decay reaches 0 within the first epoch and the learning-rate
multiplier stays at 0 for the rest of the run, so the weights stop changing while the loop
keeps "training" without any error (the too-small t_total problem from the source).

Source: https://github.com/huggingface/transformers/issues/324
"""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from transformers import BertConfig, BertForSequenceClassification, get_linear_schedule_with_warmup

torch.manual_seed(0)
torch.set_num_threads(2)

ARGS = {"epochs": 4, "batch_size": 16, "lr": 1e-3, "warmup_steps": 2, "n_train": 160}


def build_data(n, g, vocab=60, seq=10):
    ids = torch.randint(5, vocab, (n, seq), generator=g)
    ids[:, 0] = 2
    y = (ids[:, 1:5].float().mean(1) > ids[:, 5:].float().mean(1)).long()
    return TensorDataset(ids, y)


def main():
    g = torch.Generator().manual_seed(0)
    ds = build_data(ARGS["n_train"], g)
    dl = DataLoader(ds, batch_size=ARGS["batch_size"], shuffle=True, generator=g)
    cfg = BertConfig(
        vocab_size=60,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=16,
        num_labels=2,
    )
    model = BertForSequenceClassification(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=ARGS["lr"], weight_decay=0.01)
    sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=ARGS["warmup_steps"],
                                            num_training_steps=ARGS["epochs"])  # BUG-LINE  # fmt: skip
    step = 0
    for epoch in range(ARGS["epochs"]):
        model.train()
        tot, n = 0.0, 0
        for ids, y in dl:
            loss = F.cross_entropy(model(input_ids=ids).logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            tot += loss.item() * len(y)
            n += len(y)
        print(f"epoch {epoch}  step {step}  mean loss {tot / n:.4f}  lr {sched.get_last_lr()[0]:.2e}")


if __name__ == "__main__":
    main()
