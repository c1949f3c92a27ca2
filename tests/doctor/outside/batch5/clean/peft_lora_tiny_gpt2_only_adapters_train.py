"""LoRA fine-tuning with peft on a tiny GPT-2 built from a config: ``get_peft_model`` freezes the base model and
adds trainable rank-8 adapters on ``c_attn``; the optimizer is built after wrapping from the trainable
parameters. A frozen base with zero-initialised B matrices is the intended starting point.

Source: https://huggingface.co/docs/peft/main/en/quicktour
"""

import warnings

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging

warnings.filterwarnings("ignore")
logging.set_verbosity_error()
torch.manual_seed(0)
base = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64))
config = LoraConfig(
    r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["c_attn"], fan_in_fan_out=True, task_type="CAUSAL_LM"
)
model = get_peft_model(base, config)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
model.train()
for _step in range(5):
    ids = torch.randint(0, 100, (8, 16))
    loss = model(input_ids=ids, labels=ids).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
