"""Trains a causal language model with the HF Trainer and label_smoothing_factor=0.1. The GPT-2 model is wrapped in a
small custom nn.Module (it adds a learned output temperature) that returns a CausalLMOutput. When label smoothing is
on, the Trainer pops `labels`, calls the model without them and applies its LabelSmoother itself; it only shifts the
labels by one position when the model's class name is a known causal-LM class. The wrapper's name is not, so the
logits at position t are compared with the token at position t (the current input token) instead of t+1: the model
learns to copy its input, the loss goes down quickly, and no warning is given.

Source: https://github.com/huggingface/transformers/issues/17960
"""

import tempfile

import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from transformers.modeling_outputs import CausalLMOutput

torch.manual_seed(0)
V = 40
g = torch.Generator().manual_seed(2)
data = []
for _ in range(96):
    s = int(torch.randint(0, V, (1,), generator=g))
    data.append({"input_ids": [(s + 5 * k) % V for k in range(12)]})


class TemperatureLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = GPT2LMHeadModel(
            GPT2Config(vocab_size=V, n_positions=12, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
        )
        self.log_temp = nn.Parameter(torch.zeros(()))
        self.config = self.lm.config

    def forward(self, input_ids, labels=None):
        logits = self.lm(input_ids=input_ids).logits / self.log_temp.exp()
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1))
        return CausalLMOutput(loss=loss, logits=logits)


def collate(feats):
    ids = torch.tensor([f["input_ids"] for f in feats])
    return {"input_ids": ids, "labels": ids.clone()}


model = TemperatureLM()
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(
        output_dir=out,
        max_steps=12,
        per_device_train_batch_size=16,
        learning_rate=3e-3,
        label_smoothing_factor=0.1,  # BUG-LINE
        report_to=[],
        logging_steps=4,
        save_strategy="no",
        use_cpu=True,
        seed=0,
    )
    tr = Trainer(model=model, args=args, train_dataset=data, data_collator=collate)
    tr.train()
    model.eval()
    with torch.no_grad():
        b = collate(data[:16])
        print("next-token CE after training:", float(model(**b).loss))
