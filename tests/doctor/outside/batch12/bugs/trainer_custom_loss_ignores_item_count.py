"""Trains a tiny GPT-2 (built from a config) with a Trainer subclass whose compute_loss computes a
token-weighted cross-entropy averaged over the current micro-batch, with gradient accumulation over 4
micro-batches and plain SGD. The override accepts `num_items_in_batch` but ignores it. Because the
GPT-2 forward takes **kwargs, the Trainer assumes the loss is already normalised by the number of items
in the whole accumulated batch and skips its own division by the accumulation steps, so every update
uses a gradient 4x larger than intended (an effective learning rate 4x too high). No error or warning
is raised; the logged loss is inflated by the same factor, which just looks like a high loss.

Source: https://github.com/huggingface/transformers/issues/47688
"""

import tempfile

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
V = 32


class DS(torch.utils.data.Dataset):
    def __init__(self, n):
        a = torch.randint(0, V, (n, 1))
        self.ids = (a + 3 * torch.arange(14)) % V

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class WeightedLossTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits[:, :-1]
        tgt = labels[:, 1:]
        ce = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1), reduction="none")
        w = torch.ones_like(ce).view(tgt.shape)
        w[:, :2] = 0.5  # first tokens are hard to predict, weight them down
        loss = (ce * w.reshape(-1)).sum() / w.sum()  # BUG-LINE
        return (loss, outputs) if return_outputs else loss


cfg = GPT2Config(vocab_size=V, n_embd=64, n_layer=2, n_head=4, n_positions=16, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
w0 = model.transformer.h[0].attn.c_attn.weight.detach().clone()
with tempfile.TemporaryDirectory() as out_dir:
    args = TrainingArguments(
        output_dir=out_dir,
        max_steps=8,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=4,
        learning_rate=0.05,
        optim="sgd",
        lr_scheduler_type="constant",
        max_grad_norm=100.0,
        logging_steps=2,
        report_to=[],
        save_strategy="no",
        seed=0,
        use_cpu=True,
        disable_tqdm=True,
    )
    WeightedLossTrainer(model=model, args=args, train_dataset=DS(512)).train()
print("update size of first attention weight:", (model.transformer.h[0].attn.c_attn.weight.detach() - w0).norm().item())
