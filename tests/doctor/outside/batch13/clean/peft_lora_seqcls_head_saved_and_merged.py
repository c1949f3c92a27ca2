"""LoRA fine-tuning of a GPT-2 sequence classifier with the head trained and then merged.

Unusual but correct: task_type="SEQ_CLS" makes peft wrap the freshly initialised `score`
head in modules_to_save, so it is trained in full alongside the low-rank adapters. The
pad_token_id is set in the config so the classifier pools the last non-pad token of
right-padded sequences. After training the adapter is merged with merge_and_unload() and the
merged plain model is checked to give the same logits as the adapter model.

Source: https://github.com/huggingface/peft/issues/310
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2ForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

V, L, C, PAD = 33, 10, 4, 0
cfg = GPT2Config(
    n_layer=2,
    n_embd=32,
    n_head=2,
    vocab_size=V,
    n_positions=L,
    num_labels=C,
    pad_token_id=PAD,
    bos_token_id=PAD,
    eos_token_id=PAD,
)
base = GPT2ForSequenceClassification(cfg)
model = get_peft_model(
    base, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], task_type="SEQ_CLS", lora_dropout=0.0)
)
model.print_trainable_parameters()


def make_batch(n):
    lens = torch.randint(4, L + 1, (n,))
    ids = torch.randint(1, V, (n, L))
    ar = torch.arange(L).expand(n, L)
    ids = ids.masked_fill(ar >= lens[:, None], PAD)
    last = ids.gather(1, (lens - 1)[:, None]).squeeze(1)
    labels = ((last - 1) * C // (V - 1)).clamp(max=C - 1)
    return ids, (ar < lens[:, None]).long(), labels


opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=8e-3)
model.train()
for step in range(70):
    ids, mask, labels = make_batch(32)
    loss = F.cross_entropy(model(input_ids=ids, attention_mask=mask).logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

model.eval()
ids, mask, labels = make_batch(128)
with torch.no_grad():
    ref = model(input_ids=ids, attention_mask=mask).logits
    merged = model.merge_and_unload()
    out = merged(input_ids=ids, attention_mask=mask).logits
print(
    f"accuracy {(ref.argmax(-1) == labels).float().mean().item():.3f}; "
    f"merged vs adapter max diff {(ref - out).abs().max().item():.2e}"
)
