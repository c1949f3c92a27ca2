"""IA3 on a tiny GPT-2 language model with a manual training loop.

Unusual but correct: IA3 learns only rescaling vectors. target_modules lists
the attention projection c_attn and the MLP output projection mlp.c_proj;
feedforward_modules=["mlp.c_proj"] is a subset of target_modules as IA3
requires, so that module's vector scales its input (feed-forward style)
while c_attn's scales its output. IA3 vectors start at 1.0 (identity) and
need a much larger learning rate than LoRA; the base model (briefly
pre-trained in full first) is frozen while the IA3 vectors adapt it.

Source: https://github.com/huggingface/peft/pull/972
"""

import torch
from peft import IA3Config, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ = 32, 12


def batch(g, steps, n=16):
    start = torch.randint(0, VOCAB, (n, 1), generator=g)
    step = torch.tensor(steps)[torch.randint(0, len(steps), (n, 1), generator=g)]
    return (start + step * torch.arange(SEQ)[None, :]) % VOCAB


def main():
    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=SEQ,
        n_embd=32,
        n_layer=2,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    base = GPT2LMHeadModel(config)
    # short full pre-training of the base on strides 1 and 2
    pre_opt = torch.optim.AdamW(base.parameters(), lr=3e-3)
    g0 = torch.Generator().manual_seed(0)
    for step in range(40):
        ids = batch(g0, [1, 2])
        loss = base(input_ids=ids, labels=ids).loss
        pre_opt.zero_grad()
        loss.backward()
        pre_opt.step()
    print(f"base pre-training loss {loss.item():.4f}")
    cfg = IA3Config(target_modules=["c_attn", "mlp.c_proj"], feedforward_modules=["mlp.c_proj"])
    model = get_peft_model(base, cfg)
    model.print_trainable_parameters()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-2)
    g = torch.Generator().manual_seed(1)
    model.train()
    for step in range(60):
        ids = batch(g, [1])
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 59:
            print(f"step {step:3d} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
