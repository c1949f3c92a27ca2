"""Second-stage training of a saved LoRA adapter with a new task head.

Stage 1 trains a LoRA adapter on a tiny BERT encoder and saves it. Stage 2
reloads the adapter onto a fresh copy of the base encoder to keep adapting it
on a related task, with a new linear head on top. PeftModel.from_pretrained
loads adapters in inference mode unless is_trainable=True is passed, so every
LoRA weight comes back with requires_grad=False. The optimizer filters on
requires_grad, so only the new head is trained; the adapter that was meant to
keep learning is silently frozen and the loss plateaus at what a linear probe
on frozen features can reach.

Source: https://openillumi.com/en/en-peft-from-pretrained-get-peft-model-diff
"""

import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import BertConfig, BertModel

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB = 40
SEQ = 10
CONFIG = BertConfig(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=SEQ,
)


def make_batch(g, n=16):
    ids = torch.randint(3, VOCAB, (n, SEQ), generator=g)
    y = (ids[:, 1] > VOCAB // 2).long()
    return ids, y


class Classifier(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(CONFIG.hidden_size, 2)

    def forward(self, ids):
        h = self.encoder(input_ids=ids).last_hidden_state[:, 0]
        return self.head(h)


def train(model, steps, seed, tag):
    g = torch.Generator().manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=3e-3)
    model.train()
    for step in range(steps):
        ids, y = make_batch(g)
        loss = F.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == steps - 1:
            print(f"[{tag}] step {step:3d} loss {loss.item():.4f}")


def main():
    base_state = BertModel(CONFIG).state_dict()
    lora_cfg = LoraConfig(r=8, lora_alpha=16, target_modules=["query", "value", "dense"], lora_dropout=0.0)

    stage1_base = BertModel(CONFIG)
    stage1_base.load_state_dict(base_state)
    stage1 = Classifier(get_peft_model(stage1_base, lora_cfg))
    train(stage1, 25, seed=1, tag="stage1")
    path = tempfile.mkdtemp()
    stage1.encoder.save_pretrained(path)

    stage2_base = BertModel(CONFIG)
    stage2_base.load_state_dict(base_state)
    encoder = PeftModel.from_pretrained(stage2_base, path)  # BUG-LINE
    stage2 = Classifier(encoder)
    train(stage2, 25, seed=2, tag="stage2")


if __name__ == "__main__":
    main()
