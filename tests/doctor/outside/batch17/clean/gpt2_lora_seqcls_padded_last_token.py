"""LoRA (peft) sequence classification with a tiny GPT-2 on right-padded inputs.

Modelled on the peft discussion of GPT-2's Conv1D projections: the LoRA config sets
fan_in_fan_out=True because GPT-2 stores c_attn/c_proj weights transposed. Unusual
but intended: almost every base weight is frozen (only LoRA A/B matrices and the
`score` head, which task_type="SEQ_CLS" puts in modules_to_save, train); lora_B
starts at zero so the adapted model initially equals the base model; the GPT-2
classifier reads the hidden state of the last non-pad token, which works because
config.pad_token_id is set and padding is on the right with an attention mask.

Source: https://github.com/huggingface/peft/issues/155
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2ForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

V, PAD, MAXLEN = 30, 0, 12
cfg = GPT2Config(
    vocab_size=V,
    n_positions=16,
    n_embd=64,
    n_layer=2,
    n_head=4,
    num_labels=2,
    pad_token_id=PAD,
    bos_token_id=PAD,
    eos_token_id=PAD,
)
base = GPT2ForSequenceClassification(cfg)

lora_cfg = LoraConfig(
    task_type="SEQ_CLS", r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["c_attn", "c_proj"], fan_in_fan_out=True
)
model = get_peft_model(base, lora_cfg)
model.print_trainable_parameters()


def batch(n):
    lengths = torch.randint(4, MAXLEN + 1, (n,))
    ids = torch.full((n, MAXLEN), PAD)
    mask = torch.zeros(n, MAXLEN, dtype=torch.long)
    y = torch.randint(0, 2, (n,))
    for i, L in enumerate(lengths.tolist()):
        toks = torch.randint(1, V, (L,))
        # label 1: the sequence ends with a token from the upper half of the vocabulary
        toks[-1] = torch.randint(V // 2, V, (1,)) if y[i] == 1 else torch.randint(1, V // 2, (1,))
        ids[i, :L] = toks
        mask[i, :L] = 1
    return ids, mask, y


opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)
model.train()
for step in range(100):
    ids, mask, y = batch(32)
    out = model(input_ids=ids, attention_mask=mask, labels=y)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 20 == 0:
        acc = (out.logits.argmax(-1) == y).float().mean().item()
        print(f"step {step:3d} loss {out.loss.item():.4f} acc {acc:.2f}")
print(f"final loss {out.loss.item():.4f}")
