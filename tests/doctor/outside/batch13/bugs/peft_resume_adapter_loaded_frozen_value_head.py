"""Resuming LoRA training from a saved adapter: the adapter is loaded in inference mode.

Stage 1 trains a LoRA adapter on a small GPT-2 policy together with a scalar value head (as in
RL fine-tuning), then saves the adapter. Stage 2 rebuilds the base model, loads the adapter with
PeftModel.from_pretrained and continues training. from_pretrained defaults to is_trainable=False,
which loads the adapter frozen, so in stage 2 the only parameters that still receive updates are
those of the separately created value head. The language-model loss stays flat for the whole
resumed run while the value loss keeps falling, which makes the run look healthy.

Source: https://github.com/huggingface/trl/issues/6700
"""

import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.set_num_threads(2)
V, L, D = 24, 10, 48
cfg = GPT2Config(n_layer=2, n_embd=D, n_head=2, vocab_size=V, n_positions=L, bos_token_id=0, eos_token_id=0)


def make_base():
    torch.manual_seed(123)  # stands in for loading the same pretrained checkpoint
    return GPT2LMHeadModel(cfg)


def batch(n=32):
    start = torch.randint(0, V, (n, 1))
    ids = (start + 3 * torch.arange(L)) % V
    ret = ids[:, -1].float() / V  # scalar "return" regressed by the value head
    return ids, ret


def run(model, value_head, steps, tag):
    params = [p for p in model.parameters() if p.requires_grad] + list(value_head.parameters())
    opt = torch.optim.AdamW(params, lr=3e-3)
    model.train()
    for step in range(steps):
        ids, ret = batch()
        out = model(input_ids=ids, labels=ids, output_hidden_states=True)
        v = value_head(out.hidden_states[-1][:, -1]).squeeze(-1)
        v_loss = F.mse_loss(v, ret)
        loss = out.loss + v_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[{tag}] step {step:2d} lm_loss {out.loss.item():.4f} value_loss {v_loss.item():.4f}")


torch.manual_seed(0)
lora = LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_proj"], task_type="CAUSAL_LM")
model = get_peft_model(make_base(), lora)
value_head = nn.Linear(D, 1)
run(model, value_head, 30, "stage1")
ckpt = tempfile.mkdtemp()
model.save_pretrained(ckpt)
torch.save(value_head.state_dict(), f"{ckpt}/value_head.pt")

torch.manual_seed(1)
model = PeftModel.from_pretrained(make_base(), ckpt)  # BUG-LINE
value_head = nn.Linear(D, 1)
value_head.load_state_dict(torch.load(f"{ckpt}/value_head.pt"))
run(model, value_head, 40, "resume")
