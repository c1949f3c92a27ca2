"""A causal-LM fine-tuning loop shifts the targets itself (inputs = ids[:, :-1], labels = ids[:, 1:]) and then
passes them to GPT2LMHeadModel, which shifts labels internally once more. The model is trained to predict the
token two positions ahead (next-next-token prediction); the loss is finite and decreases a bit, so nothing
looks wrong.

Source: https://github.com/huggingface/transformers/pull/44642
"""

import torch
import transformers

transformers.logging.set_verbosity_error()
torch.manual_seed(0)
config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
model = transformers.GPT2LMHeadModel(config)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randint(0, 100, (32, 17))
for i in range(0, 32, 8):
    ids = data[i : i + 8]
    inputs, labels = ids[:, :-1], ids[:, 1:]  # BUG-LINE
    out = model(input_ids=inputs, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
