"""Resuming LoRA fine-tuning correctly: the saved adapter is loaded with
``PeftModel.from_pretrained(base, path, is_trainable=True)``, so only the LoRA A/B matrices are trainable (the
base GPT-2 weights stay frozen) and training continues from the saved, non-zero adapter weights.

Source: https://github.com/ymcui/Chinese-LLaMA-Alpaca-2/pull/578
"""

import tempfile

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
data = torch.randint(0, 100, (24, 16))
with tempfile.TemporaryDirectory() as tmp:
    base = GPT2LMHeadModel(config)
    base.save_pretrained(f"{tmp}/base")
    first = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], fan_in_fan_out=True))
    with torch.no_grad():
        for n, p in first.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    first.save_pretrained(f"{tmp}/adapter")

    model = PeftModel.from_pretrained(
        GPT2LMHeadModel.from_pretrained(f"{tmp}/base"), f"{tmp}/adapter", is_trainable=True
    )
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    for i in range(0, 24, 6):
        out = model(input_ids=data[i : i + 6], labels=data[i : i + 6])
        opt.zero_grad()
        out.loss.backward()
        opt.step()
