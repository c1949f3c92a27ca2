"""REINFORCE with a learned value baseline whose advantage is detached in the policy loss.

Unusual: the advantage (return - baseline) is computed from a network output but .detach()ed,
so the policy gradient does not train the baseline; the baseline gets its own MSE loss.
Source: https://github.com/ChenRocks/fast_abs_rl/issues/49
"""

import torch

torch.manual_seed(0)
policy = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
value = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
opt = torch.optim.Adam(list(policy.parameters()) + list(value.parameters()), lr=1e-2)
gamma = 0.95
for _episode in range(8):
    s = torch.randn(12, 4)
    dist = torch.distributions.Categorical(logits=policy(s))
    a = dist.sample()
    r = (a == (s[:, 0] > 0).long()).float()
    returns, g = [], 0.0
    for rt in reversed(r.tolist()):
        g = rt + gamma * g
        returns.append(g)
    returns = torch.tensor(returns[::-1])
    b = value(s).squeeze(1)
    adv = (returns - b).detach()
    loss = -(dist.log_prob(a) * adv).mean() + torch.nn.functional.mse_loss(b, returns)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
