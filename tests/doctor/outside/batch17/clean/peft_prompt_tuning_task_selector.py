"""Prompt tuning (peft) of a frozen tiny GPT-2: learned virtual tokens select a task.

Modelled on the prompt-tuning description that only the prompt parameters are
updated while the base model stays frozen. A base LM is first trained on two
Markov chains, chosen by an indicator token at position 0. Then the indicator is
dropped and only 4 virtual-token embeddings (PromptTuningConfig) are trained so the
frozen model continues in chain B. Unusual but intended: the whole transformer is
frozen (a tiny fraction of parameters trains); peft prepends the virtual tokens
and pads the labels for them with -100 internally, so logits are longer than the
input ids; the learning rate is large because only a few embeddings move.

Source: https://github.com/huggingface/smol-course/pull/41
"""

import torch
from peft import PromptTuningConfig, PromptTuningInit, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T = 26, 12
chain = {0: torch.randperm(V - 2) + 2, 1: torch.randperm(V - 2) + 2}  # tokens 0/1 are indicators


def sample(n, task, with_indicator=True):
    s = torch.empty(n, T, dtype=torch.long)
    s[:, 0] = task
    s[:, 1] = torch.randint(2, V, (n,))
    for t in range(2, T):
        s[:, t] = chain[task][s[:, t - 1] - 2]
    return s if with_indicator else s[:, 1:]


cfg = GPT2Config(vocab_size=V, n_positions=32, n_embd=64, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
base = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(base.parameters(), lr=3e-3)
for step in range(80):
    x = torch.cat([sample(16, 0), sample(16, 1)])
    loss = base(input_ids=x, labels=x).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"base LM loss {loss.item():.4f}")

pt_cfg = PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=4, prompt_tuning_init=PromptTuningInit.RANDOM)
model = get_peft_model(base, pt_cfg)
model.print_trainable_parameters()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-2)

model.train()
for step in range(60):
    x = sample(32, 1, with_indicator=False)
    out = model(input_ids=x, attention_mask=torch.ones_like(x), labels=x)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(
            f"step {step:3d} prompt-tuning loss {out.loss.item():.4f} "
            f"logits len {out.logits.shape[1]} input len {x.shape[1]}"
        )
print(f"final loss {out.loss.item():.4f}")
