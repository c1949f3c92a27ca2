"""LoRA fine-tuning of a GPT-2 sequence classifier whose new `score` head is never trained.

GPT2ForSequenceClassification creates a freshly initialised `score` layer. The LoraConfig is
built without `task_type` (and without `modules_to_save`), so get_peft_model wraps the model as
a generic PeftModel: every non-LoRA parameter, including the brand-new classification head, is
frozen. Only the low-rank adapters in the attention blocks train; they must learn to fit a
random, fixed projection, so the loss creeps down slowly and accuracy stays far below what the
same budget reaches with the head trainable.

Source: https://github.com/huggingface/sentence-transformers/pull/3936
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2ForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

V, L, C = 33, 8, 8
cfg = GPT2Config(
    n_layer=2,
    n_embd=32,
    n_head=2,
    vocab_size=V,
    n_positions=L,
    num_labels=C,
    pad_token_id=0,
    bos_token_id=0,
    eos_token_id=0,
)
base = GPT2ForSequenceClassification(cfg)

lora_cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], lora_dropout=0.0)  # BUG-LINE
model = get_peft_model(base, lora_cfg)
model.print_trainable_parameters()


def make_batch(n):
    ids = torch.randint(1, V, (n, L))
    # class = which eighth of the vocabulary the final token falls in
    labels = ((ids[:, -1] - 1) * C // (V - 1)).clamp(max=C - 1)
    return ids, labels


opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
model.train()
for step in range(100):
    ids, labels = make_batch(48)
    logits = model(input_ids=ids).logits
    loss = F.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    ids, labels = make_batch(512)
    acc = (model(input_ids=ids).logits.argmax(-1) == labels).float().mean().item()
print(f"eval accuracy: {acc:.3f}")
