"""LoRA target_modules copied from another architecture: only the names that happen to exist get adapters.

The list mixes valid Llama names (q_proj, k_proj, v_proj) with names from a different model
("attn_out", "ff_proj"). PEFT silently skips the ones that do not match, so the output
projection and the MLP get no adapters and never train.
Source: https://github.com/dllm-reasoning/d1/issues/6
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
cfg = LlamaConfig(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
base = LlamaForCausalLM(cfg)
lora_cfg = LoraConfig(
    r=4,
    lora_alpha=8,
    task_type="CAUSAL_LM",
    target_modules=["q_proj", "k_proj", "v_proj", "attn_out", "ff_proj"],  # BUG-LINE
)
model = get_peft_model(base, lora_cfg)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for _step in range(6):
    ids = torch.randint(0, 64, (4, 16))
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"loss {out.loss.item():.4f}")
