"""Knowledge distillation of a 2-layer GPT-2 teacher into a 1-layer student (plain loop).

Modelled on the DistilBERT/GPT-2 distillation question about scaling the KL term by
T^2. Unusual but intended: the teacher is trained first and then frozen
(requires_grad_(False), eval(), forward under torch.no_grad()); the student loss
mixes hard-label cross-entropy with a temperature-softened KL computed by
F.kl_div on log-probabilities for *both* arguments (log_target=True), averaged over
tokens and multiplied by T^2 so its gradient scale does not shrink with the
temperature; the KL input is log-probs by design, not logits.

Source: https://github.com/huggingface/transformers/issues/1181
"""

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T_LEN, TEMP, ALPHA = 32, 16, 2.0, 0.5
succ = torch.stack([torch.randperm(V), torch.randperm(V), torch.randperm(V)], 1)
probs = torch.tensor([0.6, 0.3, 0.1])


def corpus(n):
    s = torch.empty(n, T_LEN, dtype=torch.long)
    s[:, 0] = torch.randint(0, V, (n,))
    for t in range(1, T_LEN):
        s[:, t] = succ[s[:, t - 1], torch.multinomial(probs, n, replacement=True)]
    return s


common = dict(vocab_size=V, n_positions=T_LEN, n_head=4, bos_token_id=0, eos_token_id=0)
teacher = GPT2LMHeadModel(GPT2Config(n_embd=64, n_layer=2, **common))
t_opt = torch.optim.AdamW(teacher.parameters(), lr=3e-3)
for step in range(40):
    x = corpus(32)
    loss = teacher(input_ids=x, labels=x).loss
    t_opt.zero_grad()
    loss.backward()
    t_opt.step()
print(f"teacher loss {loss.item():.4f}")
teacher.requires_grad_(False).eval()

student = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=1, **common))
opt = torch.optim.AdamW(student.parameters(), lr=3e-3)
for step in range(60):
    x = corpus(32)
    with torch.no_grad():
        t_logits = teacher(input_ids=x).logits
    out = student(input_ids=x, labels=x)
    s_logp = F.log_softmax(out.logits[:, :-1] / TEMP, -1).reshape(-1, V)
    t_logp = F.log_softmax(t_logits[:, :-1] / TEMP, -1).reshape(-1, V)
    kd = F.kl_div(s_logp, t_logp, reduction="batchmean", log_target=True) * TEMP**2
    loss = ALPHA * kd + (1 - ALPHA) * out.loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step:3d} kd {kd.item():.4f} ce {out.loss.item():.4f} total {loss.item():.4f}")
print(f"final total loss {loss.item():.4f}")
