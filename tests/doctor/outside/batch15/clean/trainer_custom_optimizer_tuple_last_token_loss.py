"""HF Trainer with a user-built optimizer/scheduler passed as optimizers=(opt, sched), a
custom compute_loss on the LAST token only, and a callback that records the learning rate.

Unusual on purpose: (1) the loss is computed only on the final position of each sequence
(the model must predict the class token appended at the end; all other positions are
ignored); (2) the optimizer has two param groups (no weight decay on biases/LayerNorm, and a
10x larger lr for the LM head region) and a LambdaLR warmup, both created outside the
Trainer and handed over as a tuple, so TrainingArguments' learning_rate is not used;
(3) a TrainerCallback checks that the scheduler actually moved the lr.

Source: https://discuss.huggingface.co/t/how-to-create-custom-optimizer-and-how-does-train-args-optimizer-interact-with-custom-optimizer/18925
"""

import tempfile

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

V, T = 40, 12
A_TOK, B_TOK = 38, 39
model = GPT2LMHeadModel(
    GPT2Config(
        vocab_size=V,
        n_positions=T + 1,
        n_embd=32,
        n_layer=2,
        n_head=2,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=0,
    )
)


class PairDataset(torch.utils.data.Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randint(1, 30, (n, T), generator=g)
        self.y = torch.where((self.x == 3).any(1), A_TOK, B_TOK)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.y[i]}


class LastTokenTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        out = model(input_ids=inputs["input_ids"])
        loss = F.cross_entropy(out.logits[:, -1], labels)
        return (loss, out) if return_outputs else loss


class LrRecorder(TrainerCallback):
    def __init__(self):
        self.lrs = []

    def on_step_end(self, args, state, control, optimizer=None, **kwargs):
        self.lrs.append(optimizer.param_groups[0]["lr"])


head_like, no_decay, rest = [], [], []
for n, p in model.named_parameters():
    if n.startswith("lm_head") or "ln_f" in n:
        head_like.append(p)
    elif p.ndim < 2:
        no_decay.append(p)
    else:
        rest.append(p)
opt = torch.optim.AdamW(
    [
        {"params": rest, "weight_decay": 0.01, "lr": 2e-3},
        {"params": no_decay, "weight_decay": 0.0, "lr": 2e-3},
        {"params": head_like, "weight_decay": 0.0, "lr": 2e-2},
    ]
)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
rec = LrRecorder()
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=32,
    max_steps=50,
    logging_steps=10,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
    remove_unused_columns=False,
)
trainer = LastTokenTrainer(
    model=model, args=args, train_dataset=PairDataset(512), optimizers=(opt, sched), callbacks=[rec]
)
trainer.train()
print(f"lr first {rec.lrs[0]:.2e} last {rec.lrs[-1]:.2e}")
