"""Fine-tunes a tiny GPT-2 language model with the HF Trainer, SGD and gradient_accumulation_steps=4, overriding
compute_loss with a token-level focal loss averaged over each micro-batch. Because the GPT-2 forward accepts
**kwargs, the Trainer treats the model as "accepting loss kwargs" and, since num_items_in_batch is passed, assumes
the returned loss is already normalised over the whole accumulated batch, so it does NOT divide it by the number of
accumulation steps. The override ignores num_items_in_batch and returns a per-micro-batch mean, so every optimizer
step uses the SUM of 4 micro-batch mean gradients: with SGD the effective learning rate is 4x the configured one from
the first step on. Nothing is logged about it (the reported loss looks normal).

Source: https://github.com/MakazhanAlpamys/Soup/issues/720
"""

import tempfile

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
V = 50
g = torch.Generator().manual_seed(1)
seqs = []
for _ in range(128):
    start = int(torch.randint(0, V, (1,), generator=g))
    seqs.append({"input_ids": [(start + 3 * k) % V for k in range(16)]})


def collate(feats):
    ids = torch.tensor([f["input_ids"] for f in feats])
    return {"input_ids": ids, "labels": ids.clone()}


class FocalLMTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        out = model(**inputs)
        logits = out.logits[:, :-1].reshape(-1, V)
        tgt = labels[:, 1:].reshape(-1)
        logp = F.log_softmax(logits, -1).gather(1, tgt[:, None]).squeeze(1)
        focal = -((1 - logp.exp()) ** 2) * logp
        loss = focal.mean()
        return (loss, out) if return_outputs else loss  # BUG-LINE


model = GPT2LMHeadModel(
    GPT2Config(vocab_size=V, n_positions=16, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
)
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(
        output_dir=out,
        max_steps=6,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=4,
        optim="sgd",
        learning_rate=0.5,
        lr_scheduler_type="constant",
        max_grad_norm=1e9,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        use_cpu=True,
        seed=0,
    )
    tr = FocalLMTrainer(model=model, args=args, train_dataset=seqs, data_collator=collate)
    tr.train()
    print("grad norms:", [round(h["grad_norm"], 4) for h in tr.state.log_history if "grad_norm" in h])
