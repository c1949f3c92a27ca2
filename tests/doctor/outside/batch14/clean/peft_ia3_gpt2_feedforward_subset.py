"""IA3 adaptation of a tiny GPT-2 language model with feedforward_modules as a subset of targets.

Unusual but correct: IA3 learns only scaling vectors. `target_modules` covers the attention
projection `c_attn` and the MLP output projection `mlp.c_proj`; `feedforward_modules` lists only
`mlp.c_proj` (a subset of target_modules, as the PEFT docs require) so that module's vector scales
its input while c_attn's scales its output. GPT-2's Conv1D layers are handled by PEFT. Only the
IA3 vectors train; the frozen random base keeps its weights.

Source: https://github.com/huggingface/peft/pull/984
"""

import torch
from peft import IA3Config, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ = 24, 16
base = GPT2LMHeadModel(
    GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
)
frozen_before = base.transformer.h[0].attn.c_attn.weight.detach().clone()
config = IA3Config(target_modules=["c_attn", "mlp.c_proj"], feedforward_modules=["mlp.c_proj"], task_type="CAUSAL_LM")
model = get_peft_model(base, config)
model.print_trainable_parameters()

opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-2)
model.train()
for step in range(60):
    start = torch.randint(0, 6, (16, 1))
    x = (torch.arange(SEQ).unsqueeze(0) + start) % 6 + 1
    out = model(input_ids=x, labels=x)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 15 == 0 or step == 59:
        print(f"step {step:2d} loss {out.loss.item():.4f}")
after = model.base_model.model.transformer.h[0].attn.c_attn.base_layer.weight
print("base weights unchanged:", torch.equal(frozen_before, after))
