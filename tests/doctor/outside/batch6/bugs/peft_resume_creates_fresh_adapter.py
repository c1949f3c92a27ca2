"""To resume LoRA fine-tuning, the script rebuilds the adapter with ``get_peft_model(base,
LoraConfig.from_pretrained(ckpt))``. That only reads the config and initialises brand-new LoRA weights (B = 0);
the trained adapter weights in the checkpoint are never loaded, so "resumed" training silently restarts
from scratch. ``PeftModel.from_pretrained(base, ckpt, is_trainable=True)`` was needed.

Source: https://github.com/huggingface/peft/issues/1678
"""

import tempfile

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
data = torch.randint(0, 100, (24, 16))
with tempfile.TemporaryDirectory() as ckpt:
    previous = get_peft_model(GPT2LMHeadModel(config), LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"]))
    with torch.no_grad():
        for n, p in previous.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    previous.save_pretrained(ckpt)
    base_state = previous.get_base_model().state_dict()

    base = GPT2LMHeadModel(config)
    base.load_state_dict({k.replace("base_layer.", ""): v for k, v in base_state.items() if "lora_" not in k})
    resume_config = LoraConfig.from_pretrained(ckpt)
    resume_config.inference_mode = False
    model = get_peft_model(base, resume_config)  # BUG-LINE
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    for i in range(0, 24, 6):
        out = model(input_ids=data[i : i + 6], labels=data[i : i + 6])
        opt.zero_grad()
        out.loss.backward()
        opt.step()
