"""Click-through-rate model trained with the HF Trainer where the dense-feature column never reaches the model.

The CTR model's forward takes (user_id, item_id, dense_features=None, labels=None);
dense_features is optional so the same model can score cold-start requests that
have no dense context.  The feature pipeline stores the dense context in a column
named "dense_feats".  Trainer (remove_unused_columns=True by default) inspects the
forward signature and silently drops every dataset column whose name is not a
forward argument, so "dense_feats" is removed before collation and the model
always takes its cold-start branch.  Training runs and the loss falls a little
(from the id embeddings), but the strongest signal is never seen.

Source: https://github.com/huggingface/transformers/issues/19599
"""

import tempfile
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from datasets import Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.utils import logging as hf_logging

warnings.filterwarnings("ignore")
hf_logging.set_verbosity_error()
torch.manual_seed(0)
torch.set_num_threads(2)

N_USERS, N_ITEMS, N_DENSE = 200, 100, 8


def build_logs(n):
    g = torch.Generator().manual_seed(0)
    users = torch.randint(0, N_USERS, (n,), generator=g)
    items = torch.randint(0, N_ITEMS, (n,), generator=g)
    dense = torch.randn(n, N_DENSE, generator=g)
    item_pop = torch.linspace(-1, 1, N_ITEMS)[items]
    logit = 2.5 * dense[:, 0] - 2.0 * dense[:, 1] + 1.5 * dense[:, 2] * dense[:, 3] + 0.5 * item_pop
    clicks = torch.bernoulli(torch.sigmoid(logit), generator=g)
    return {
        "user_id": users.tolist(),
        "item_id": items.tolist(),
        "dense_feats": dense.tolist(),  # BUG-LINE
        "labels": clicks.tolist(),
    }


class CTRModel(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.user_emb = nn.Embedding(N_USERS, d)
        self.item_emb = nn.Embedding(N_ITEMS, d)
        self.dense_proj = nn.Sequential(nn.Linear(N_DENSE, 32), nn.ReLU(), nn.Linear(32, d))
        self.head = nn.Sequential(nn.Linear(3 * d, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, user_id, item_id, dense_features=None, labels=None):
        u, i = self.user_emb(user_id), self.item_emb(item_id)
        if dense_features is None:
            ctx = torch.zeros_like(u)
        else:
            ctx = self.dense_proj(dense_features.float())
        logits = self.head(torch.cat([u, i, ctx], dim=-1)).squeeze(-1)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = F.binary_cross_entropy_with_logits(logits, labels.float())
        return out


class PrintLoss(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            print(f"step {state.global_step:4d} loss {logs['loss']:.4f}")


def main():
    train = Dataset.from_dict(build_logs(6000))
    model = CTRModel()
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=128,
        learning_rate=3e-3,
        max_steps=200,
        logging_steps=25,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=train, callbacks=[PrintLoss()])
    trainer.train()
    model.eval()
    batch = train[:2000]
    with torch.no_grad():
        out = model(
            torch.tensor(batch["user_id"]),
            torch.tensor(batch["item_id"]),
            torch.tensor(batch["dense_feats"]),
            torch.tensor(batch["labels"]),
        )
    acc = ((out["logits"] > 0).float() == torch.tensor(batch["labels"])).float().mean().item()
    print(f"loss with dense features supplied at scoring time {out['loss'].item():.4f}, accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
