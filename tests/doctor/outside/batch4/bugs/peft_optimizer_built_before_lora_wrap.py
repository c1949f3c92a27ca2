"""The optimizer is created from ``model.parameters()`` of the plain model, and only afterwards is the model
wrapped with get_peft_model. PEFT freezes those base weights (their grads stay None, so the optimizer skips
them) and the new LoRA matrices are not in the optimizer at all: loss.backward fills LoRA gradients every step
but no parameter is ever updated. No error.

Source: https://theneuralbase.com/huggingface-transformers/learn/advanced/get-peft-model-wrapping-the-model/
"""

import torch
import transformers
from peft import LoraConfig, get_peft_model

transformers.logging.set_verbosity_error()
torch.manual_seed(0)
config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
model = transformers.GPT2LMHeadModel(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)  # BUG-LINE
lora = LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], lora_dropout=0.0, task_type="CAUSAL_LM")
model = get_peft_model(model, lora)
model.train()
data = torch.randint(0, 100, (32, 16))
for i in range(0, 32, 8):
    ids = data[i : i + 8]
    loss = model(input_ids=ids, labels=ids).loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
