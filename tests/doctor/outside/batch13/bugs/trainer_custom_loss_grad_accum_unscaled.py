"""HF Trainer subclass with its own compute_loss under gradient accumulation.

The custom compute_loss (label-smoothed next-token cross entropy) accepts the
`num_items_in_batch` argument but ignores it and returns a per-micro-batch mean. Because the
model's forward accepts **kwargs, the Trainer concludes that the loss is already normalised by
the number of items in the whole accumulated batch and therefore skips its own division by
gradient_accumulation_steps. Every micro-batch gradient is added at full size, so the update is
gradient_accumulation_steps times too large (with SGD this is a 4x learning rate) and the
logged loss is inflated by the same factor. No error or warning is raised.

Source: https://github.com/huggingface/transformers/issues/37766
"""

import tempfile

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

V, L = 24, 12


class Cyclic(Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(0)
        start = torch.randint(0, V, (n, 1), generator=g)
        step = torch.randint(1, 4, (n, 1), generator=g)
        self.ids = (start + step * torch.arange(L)) % V

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class SmoothedLMTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        out = model(**inputs)
        logits = out.logits[:, :-1].reshape(-1, out.logits.size(-1))
        target = labels[:, 1:].reshape(-1)
        loss = F.cross_entropy(logits, target, label_smoothing=0.05)  # BUG-LINE
        return (loss, out) if return_outputs else loss


cfg = GPT2Config(n_layer=2, n_embd=48, n_head=2, vocab_size=V, n_positions=L, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=8,
    gradient_accumulation_steps=4,
    max_steps=20,
    learning_rate=0.25,
    optim="sgd",
    max_grad_norm=0.0,
    lr_scheduler_type="constant",
    logging_steps=5,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
    seed=0,
)
trainer = SmoothedLMTrainer(model=model, args=args, train_dataset=Cyclic())
trainer.train()
