"""Fine-tunes a tiny BERT sentence classifier (sentiment-like synthetic task) with LoRA from peft in a hand-written
loop. The LoraConfig omits task_type, so get_peft_model returns a generic PeftModel that freezes every non-LoRA
parameter, including the freshly initialised classification head: nothing adds the head to modules_to_save. The model
therefore trains LoRA matrices in the attention layers against a random, frozen output projection. There is no error
(LoRA parameters do get gradients) and the loss moves a little, but the head never learns.

Source: https://github.com/TNI-playground/Fed_HeLLo/issues/2
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
V, L = 60, 12
cfg = BertConfig(
    vocab_size=V,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=128,
    max_position_embeddings=32,
    num_labels=3,
)
base = BertForSequenceClassification(cfg)
lcfg = LoraConfig(r=8, lora_alpha=16, target_modules=["query", "value"], lora_dropout=0.0)  # BUG-LINE
model = get_peft_model(base, lcfg)
trainable = [n for n, p in model.named_parameters() if p.requires_grad]
print("trainable tensors:", len(trainable), "classifier trainable:", any("classifier" in n for n in trainable))

g = torch.Generator().manual_seed(0)
x = torch.randint(3, V, (256, L), generator=g)
y = (x[:, :4] % 3).sum(1) % 3
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
model.train()
for step in range(30):
    idx = torch.randint(0, 256, (32,), generator=g)
    out = model(input_ids=x[idx], attention_mask=torch.ones_like(x[idx]), labels=y[idx])
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(step, round(out.loss.item(), 4))
model.eval()
with torch.no_grad():
    acc = (model(input_ids=x, attention_mask=torch.ones_like(x)).logits.argmax(-1) == y).float().mean()
print("train accuracy:", float(acc))
