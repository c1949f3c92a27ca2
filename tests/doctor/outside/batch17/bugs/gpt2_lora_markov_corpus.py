"""LoRA (peft) fine-tuning of a tiny GPT-2 on a synthetic Markov-chain corpus.

The dataset code shifts the labels by one position itself (labels = tokens[1:]),
but GPT2LMHeadModel shifts labels internally again. Logit t is therefore trained
against token t+2: the adapter learns next-next-token prediction. Because the
corpus is a stochastic chain (each token has two possible successors) the two-step
target has more entropy and the loss plateaus well above what next-token training
reaches, yet everything runs and the loss still goes down a bit.

Source: https://discuss.huggingface.co/t/where-does-the-transformers-do-the-target-text-shifting-in-causal-lm/32408
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, N = 32, 17, 512
succ = torch.stack([torch.randperm(V), torch.randperm(V)], 1)  # two successors per token


def sample_corpus(n):
    seq = torch.empty(n, T, dtype=torch.long)
    seq[:, 0] = torch.randint(0, V, (n,))
    for t in range(1, T):
        choice = torch.randint(0, 2, (n,))
        seq[:, t] = succ[seq[:, t - 1], choice]
    return seq


corpus = sample_corpus(N)

cfg = GPT2Config(vocab_size=V, n_positions=32, n_embd=64, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
base = GPT2LMHeadModel(cfg)
# pretend-pretrain the base briefly so the adapter has something to adapt
pre_opt = torch.optim.AdamW(base.parameters(), lr=3e-3)
for _ in range(10):
    x = torch.randint(0, V, (32, T))
    l = base(input_ids=x, labels=x).loss
    pre_opt.zero_grad()
    l.backward()
    pre_opt.step()

lora_cfg = LoraConfig(
    r=8, lora_alpha=16, target_modules=["c_attn", "c_fc"], lora_dropout=0.0, fan_in_fan_out=True, task_type="CAUSAL_LM"
)
model = get_peft_model(base, lora_cfg)
model.print_trainable_parameters()

opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-2)
model.train()
for step in range(120):
    batch = corpus[torch.randint(0, N, (32,))]
    inputs = batch[:, :-1]
    labels = batch[:, 1:]  # BUG-LINE
    loss = model(input_ids=inputs, labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")
print(f"final loss {loss.item():.4f}")
