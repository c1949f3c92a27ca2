"""LoRA fine-tuning of a tiny BERT classifier with peft: the base weights are frozen by design, LoRA adapters are
added to the attention query/value projections, and the freshly initialised classifier head is kept fully
trainable via modules_to_save. Most parameters having no gradient is intended.

Source: https://huggingface.co/docs/peft/developer_guides/troubleshooting
"""

import torch
import torch.nn.functional as F
import transformers
from peft import LoraConfig, get_peft_model

transformers.logging.set_verbosity_error()
torch.manual_seed(0)
config = transformers.BertConfig(
    vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, num_labels=2
)
base = transformers.BertForSequenceClassification(config)
lora = LoraConfig(
    r=4, lora_alpha=8, target_modules=["query", "value"], modules_to_save=["classifier"], lora_dropout=0.0
)
model = get_peft_model(base, lora)
model.train()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
ids = torch.randint(1, 100, (64, 10))
labels = (ids[:, 0] > 50).long()
for i in range(0, 64, 16):
    logits = model(input_ids=ids[i : i + 16], attention_mask=torch.ones(16, 10, dtype=torch.long)).logits
    loss = F.cross_entropy(logits, labels[i : i + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()
