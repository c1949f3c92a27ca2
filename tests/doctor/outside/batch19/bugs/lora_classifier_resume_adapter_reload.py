"""Two-stage LoRA fine-tune of a tiny GPT-2 backbone + linear classification head (peft).

Stage 1 trains LoRA adapters on the backbone and the head, then saves the adapter and head.
Stage 2 ("resume") rebuilds the backbone, re-attaches the saved adapter with
PeftModel.from_pretrained(...) and keeps training. from_pretrained loads adapters in
inference mode (is_trainable=False by default), so every LoRA weight has
requires_grad=False. Only the head is still trainable, so the loop runs without error and
the loss moves a little, but the adapters are silently frozen for the whole resumed run
("trainable params: 0" in the report).

Source: https://github.com/tloen/alpaca-lora/issues/352
"""

import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import GPT2Config, GPT2Model

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, N_CLASSES, SEQ = 40, 4, 12


def base_config():
    return GPT2Config(vocab_size=VOCAB, n_positions=16, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)


class Classifier(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(48, N_CLASSES)

    def forward(self, ids):
        h = self.backbone(input_ids=ids).last_hidden_state
        return self.head(h.mean(dim=1))


def batch(g, n=16):
    y = torch.randint(0, N_CLASSES, (n,), generator=g)
    ids = torch.randint(4, VOCAB, (n, SEQ), generator=g)
    pos = torch.randint(0, SEQ, (n,), generator=g)
    ids[torch.arange(n), pos] = y  # class token hidden at a random position
    return ids, y


def run(model, steps, g, tag):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=3e-3)
    model.train()
    for step in range(1, steps + 1):
        ids, y = batch(g)
        loss = F.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[{tag}] step {step:3d}  loss {loss.item():.4f}")


def main():
    g = torch.Generator().manual_seed(0)
    work = tempfile.mkdtemp()
    base_dir, adapter_dir = os.path.join(work, "base"), os.path.join(work, "adapter")
    GPT2Model(base_config()).save_pretrained(base_dir)

    lora_cfg = LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_fc"], fan_in_fan_out=True, lora_dropout=0.0)
    backbone = get_peft_model(GPT2Model.from_pretrained(base_dir), lora_cfg)
    model = Classifier(backbone)
    run(model, 20, g, "stage1")
    backbone.save_pretrained(adapter_dir)
    torch.save(model.head.state_dict(), os.path.join(work, "head.pt"))

    # ---- resume ----
    base = GPT2Model.from_pretrained(base_dir)
    backbone = PeftModel.from_pretrained(base, adapter_dir)  # BUG-LINE
    model = Classifier(backbone)
    model.head.load_state_dict(torch.load(os.path.join(work, "head.pt")))
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"resumed model: {n_train} trainable parameters")
    run(model, 30, g, "stage2")


if __name__ == "__main__":
    main()
