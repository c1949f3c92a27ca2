"""HF Trainer subclass with a custom token-level loss that is correct under gradient accumulation.

Unusual but correct: the custom compute_loss down-weights a set of frequent "filler" tokens
and computes a SUM of weighted token losses, then divides by `num_items_in_batch`, the number of
non-ignored label tokens in the whole accumulated batch that the Trainer passes in. Because the
model's forward accepts loss kwargs the Trainer does not divide by gradient_accumulation_steps
again, so the step equals the token-mean over all micro-batches (padding positions are -100 and
excluded). When num_items_in_batch is absent (evaluation) it falls back to the local count.

Source: https://github.com/huggingface/transformers/pull/34198
"""

import tempfile

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

V, L, PAD = 24, 12, 0
FILLER = torch.tensor([1, 2])


class Seqs(Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(0)
        self.items = []
        for _ in range(n):
            k = int(torch.randint(6, L + 1, (1,), generator=g))
            start = int(torch.randint(3, V, (1,), generator=g))
            ids = torch.full((L,), PAD)
            ids[:k] = 3 + (start - 3 + torch.arange(k)) % (V - 3)
            ids[1:k:3] = FILLER[0]
            labels = ids.masked_fill(torch.arange(L) >= k, -100)
            mask = (torch.arange(L) < k).long()
            self.items.append({"input_ids": ids, "attention_mask": mask, "labels": labels})

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class WeightedTokenTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        out = model(**inputs)
        logits = out.logits[:, :-1].reshape(-1, out.logits.size(-1))
        target = labels[:, 1:].reshape(-1)
        tok = F.cross_entropy(logits, target, ignore_index=-100, reduction="none")
        w = torch.where(torch.isin(target, FILLER), 0.3, 1.0)
        valid = target != -100
        denom = num_items_in_batch if num_items_in_batch is not None else valid.sum()
        loss = (tok * w * valid).sum() / denom
        return (loss, out) if return_outputs else loss


cfg = GPT2Config(
    n_layer=2, n_embd=48, n_head=2, vocab_size=V, n_positions=L, bos_token_id=0, eos_token_id=0, pad_token_id=PAD
)
model = GPT2LMHeadModel(cfg)
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=8,
    gradient_accumulation_steps=4,
    max_steps=25,
    learning_rate=3e-3,
    warmup_steps=3,
    logging_steps=5,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
    seed=0,
)
WeightedTokenTrainer(model=model, args=args, train_dataset=Seqs()).train()
