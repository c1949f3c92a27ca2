"""Supervised fine-tuning of a tiny GPT-2 with loss on the response tokens only (HF Trainer).

Modelled on the change that feeds prompt+response to the model and masks the prompt
in the labels with the cross-entropy ignore index. Unusual but intended: labels are
-100 for every prompt token and every padding slot, so most positions of each row
carry no loss; the pad token is the same id as EOS, yet the first (real) EOS after
each response keeps its label because the mask is built from lengths, not from
token ids; the collator is a plain function passed to the Trainer.

Source: https://github.com/meta-pytorch/torchtune/pull/154
"""

import random
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)

EOS, SEP, OFF, NSYM = 0, 1, 2, 16
V = OFF + NSYM


def example():
    L = random.randint(2, 6)
    prompt = [random.randrange(NSYM) + OFF for _ in range(L)] + [SEP]
    response = [((t - OFF + 3) % NSYM) + OFF for t in prompt[:-1]] + [EOS]  # shift-by-3 cipher
    return prompt, response


train = [example() for _ in range(1000)]


def collate(batch):
    T = max(len(p) + len(r) for p, r in batch)
    ids = torch.full((len(batch), T), EOS)
    attn = torch.zeros(len(batch), T, dtype=torch.long)
    labels = torch.full((len(batch), T), -100)
    for i, (p, r) in enumerate(batch):
        seq = p + r
        ids[i, : len(seq)] = torch.tensor(seq)
        attn[i, : len(seq)] = 1
        labels[i, len(p) : len(seq)] = torch.tensor(r)
    return {"input_ids": ids, "attention_mask": attn, "labels": labels}


cfg = GPT2Config(
    vocab_size=V, n_positions=32, n_embd=64, n_layer=2, n_head=4, bos_token_id=EOS, eos_token_id=EOS, pad_token_id=EOS
)
model = GPT2LMHeadModel(cfg)

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=32,
    learning_rate=3e-3,
    lr_scheduler_type="cosine",
    warmup_steps=10,
    max_steps=200,
    logging_steps=40,
    save_strategy="no",
    report_to=[],
    use_cpu=True,
    disable_tqdm=True,
    seed=0,
)
trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=collate)
result = trainer.train()
print(f"final train loss {result.training_loss:.4f}")

model.eval()
p, r = example()
ids = torch.tensor([p])
with torch.no_grad():
    for _ in range(len(r)):
        nxt = model(input_ids=ids).logits[0, -1].argmax()
        ids = torch.cat([ids, nxt.view(1, 1)], 1)
print("expected", r, "generated", ids[0, len(p) :].tolist())
