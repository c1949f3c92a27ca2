"""LoRA target_modules contains a name that matches nothing, so the MLP is never adapted.

The config lists "c_attn" (matches GPT-2 attention) and "mlp.fc_in" (a name from
another architecture; GPT-2 uses mlp.c_fc).  PEFT only raises when *no* target
matches, so the wrong entry is ignored silently and the feed-forward blocks get
no adapters even though the user intended to tune them.
Source: https://github.com/bghira/SimpleTuner/issues/766
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0)
base = GPT2LMHeadModel(config)
lora_cfg = LoraConfig(
    r=4,
    lora_alpha=8,
    target_modules=["c_attn", "mlp.fc_in"],  # BUG-LINE
    fan_in_fan_out=True,
    task_type="CAUSAL_LM",
)
model = get_peft_model(base, lora_cfg)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

ids = torch.randint(0, 100, (8, 16))
model.train()
for _step in range(6):
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
adapted = sorted({n.split(".lora_")[0].split(".")[-1] for n, _ in model.named_parameters() if "lora_A" in n})
print(f"loss {out.loss.item():.4f} adapted module types: {adapted}")
