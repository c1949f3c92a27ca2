"""The usual no_decay list ["bias", "LayerNorm.weight"] is matched by name, but
RobertaLMHead names its norm "layer_norm" (lower case). The LM head's LayerNorm
weight is therefore put into the weight-decay group and gets decayed toward zero
every step, unlike all other LayerNorms, contrary to the intended recipe.

Source: https://github.com/huggingface/transformers/issues/16908
"""

import torch
from transformers import RobertaConfig, RobertaForMaskedLM

torch.manual_seed(0)
cfg = RobertaConfig(
    vocab_size=120,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=40,
)
model = RobertaForMaskedLM(cfg)
no_decay = ["bias", "LayerNorm.weight"]  # BUG-LINE
groups = [
    {
        "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
        "weight_decay": 0.1,
    },
    {
        "params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
        "weight_decay": 0.0,
    },
]
opt = torch.optim.AdamW(groups, lr=1e-3)
ids = torch.randint(3, 120, (4, 12))
labels = ids.clone()
labels[:, ::2] = -100
for _step in range(4):
    opt.zero_grad()
    loss = model(input_ids=ids, labels=labels).loss
    loss.backward()
    opt.step()
print("loss", loss.item())
