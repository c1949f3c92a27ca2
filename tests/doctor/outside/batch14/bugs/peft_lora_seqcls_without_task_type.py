"""LoRA on a sequence-classification model with no task_type in LoraConfig.

The LoraConfig only lists target_modules. Without `task_type="SEQ_CLS"`, get_peft_model
returns a plain PeftModel that freezes every non-LoRA parameter, including the freshly
initialised classification head; the head is neither trained nor saved with the adapter
(SEQ_CLS is what adds the classifier to modules_to_save). Training runs, the LoRA weights move,
but the classifier stays at its random initialisation, so accuracy plateaus.

Source: https://discuss.huggingface.co/t/task-type-parameter-of-loraconfig/52879
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)
VOCAB, SEQ = 40, 10

cfg = BertConfig(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=SEQ,
    num_labels=3,
)
model = BertForSequenceClassification(cfg)
lora_config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["query", "value"])  # BUG-LINE
model = get_peft_model(model, lora_config)
model.print_trainable_parameters()

head_before = model.base_model.model.classifier.weight.detach().clone()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)


def batch(bs=32):
    x = torch.randint(3, VOCAB, (bs, SEQ))
    y = (x[:, 0] % 3).long()
    return x, y


model.train()
for step in range(50):
    x, y = batch()
    logits = model(input_ids=x).logits
    loss = F.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        acc = (logits.argmax(-1) == y).float().mean().item()
        print(f"step {step:2d} loss {loss.item():.4f} acc {acc:.3f}")
moved = (model.base_model.model.classifier.weight - head_before).abs().max().item()
print(f"classifier head max change: {moved:.2e}")
