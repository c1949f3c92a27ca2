"""Resuming LoRA training from a saved adapter next to a frozen reference copy of it.

Unusual but correct: after stage 1 the adapter is saved. Stage 2 loads it
twice onto a fresh base: PeftModel.from_pretrained(...) gives a frozen
"default" adapter (inference mode, kept as the reference), then
load_adapter(path, adapter_name="resume", is_trainable=True) loads a second,
trainable copy, which is made active with set_adapter. Only the "resume"
adapter's LoRA weights require grad, so training continues from the stage-1
values while the reference copy stays untouched.

Source: https://github.com/abhinand5/tamil-llama/issues/7
"""

import tempfile

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ = 32, 12
CONFIG = GPT2Config(
    vocab_size=VOCAB, n_positions=SEQ, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0
)


def batch(g, n=16):
    start = torch.randint(0, VOCAB, (n, 1), generator=g)
    return (start + 3 * torch.arange(SEQ)[None, :]) % VOCAB


def train(model, steps, seed, tag):
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-2)
    g = torch.Generator().manual_seed(seed)
    model.train()
    for step in range(steps):
        ids = batch(g)
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == steps - 1:
            print(f"[{tag}] step {step:3d} loss {loss.item():.4f}")


def main():
    base_state = GPT2LMHeadModel(CONFIG).state_dict()
    lora = LoraConfig(
        r=8,
        lora_alpha=16,
        target_modules=["c_attn", "c_fc"],
        lora_dropout=0.0,
        fan_in_fan_out=True,
        task_type="CAUSAL_LM",
    )
    m1 = GPT2LMHeadModel(CONFIG)
    m1.load_state_dict(base_state)
    stage1 = get_peft_model(m1, lora)
    train(stage1, 30, 1, "stage1")
    path = tempfile.mkdtemp()
    stage1.save_pretrained(path)

    m2 = GPT2LMHeadModel(CONFIG)
    m2.load_state_dict(base_state)
    model = PeftModel.from_pretrained(m2, path)
    model.load_adapter(path, adapter_name="resume", is_trainable=True)
    model.set_adapter("resume")
    n_train = sum(p.numel() for n, p in model.named_parameters() if p.requires_grad)
    print("trainable parameters in stage 2:", n_train)
    train(model, 30, 2, "stage2")


if __name__ == "__main__":
    main()
