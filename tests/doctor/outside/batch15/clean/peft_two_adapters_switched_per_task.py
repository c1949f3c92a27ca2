"""One frozen tiny GPT-2 with two LoRA adapters, each trained on its own task via set_adapter.

Unusual on purpose: a single PeftModel holds adapters "inc" and "dec". Only the active
adapter is trainable (set_adapter flips requires_grad), so each task gets its own optimizer
built after switching, and the other adapter's weights must stay untouched while the first
one trains. Training alternates between tasks; the base model is never updated. At the end
each adapter is evaluated on its own task.

Source: https://github.com/huggingface/peft/issues/2759
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T = 40, 12
base = GPT2LMHeadModel(
    GPT2Config(vocab_size=V, n_positions=T, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
)


def lcfg():
    return LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_fc"], fan_in_fan_out=True, task_type="CAUSAL_LM")


model = get_peft_model(base, lcfg(), adapter_name="inc")
model.add_adapter("dec", lcfg())
tasks = {"inc": 1, "dec": -1}
opts = {}
for name in tasks:
    model.set_adapter(name)
    opts[name] = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)


def batch(step, bs=16):
    start = torch.randint(0, V, (bs, 1))
    return (start + step * torch.arange(T)) % V


model.train()
for rnd in range(5):
    for name, step in tasks.items():
        model.set_adapter(name)
        other = [n for n in tasks if n != name][0]
        snap = {n: p.detach().clone() for n, p in model.named_parameters() if f".{other}." in n}
        for it in range(15):
            ids = batch(step)
            loss = model(input_ids=ids, labels=ids).loss
            opts[name].zero_grad()
            loss.backward()
            opts[name].step()
        assert all(torch.equal(p, snap[n]) for n, p in model.named_parameters() if n in snap)
        print(f"round {rnd} adapter {name} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    for name, step in tasks.items():
        model.set_adapter(name)
        ids = batch(step)
        acc = (model(input_ids=ids).logits[:, :-1].argmax(-1) == ids[:, 1:]).float().mean().item()
        print(f"adapter {name} next-token accuracy {acc:.3f}")
