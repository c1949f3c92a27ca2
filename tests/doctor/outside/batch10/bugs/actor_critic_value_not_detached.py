"""One-network advantage actor-critic on a 1-D corridor task (start in the middle, +1 at the right end, -1 at
the left end, episode cap 20 steps). Policy and value heads share a trunk and are trained with a single
optimizer on policy_loss + 0.5 * value_loss. The advantage used in the policy-gradient term is computed as
returns - values without detaching the critic output, so the policy loss also pushes gradients into the value
head and the shared trunk (it drives V up wherever log-probabilities are negative), which biases the critic
and corrupts the actor update. It is ordinary differentiable arithmetic: nothing raises or warns.
Source: https://github.com/keras-team/keras-io/issues/194
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
L, GAMMA = 9, 0.95


class AC(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(L, 32), nn.Tanh())
        self.pi = nn.Linear(32, 2)
        self.v = nn.Linear(32, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.pi(h), self.v(h).squeeze(-1)


def obs(s):
    o = torch.zeros(L)
    o[s] = 1.0
    return o


net = AC()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for episode in range(120):
    s, logps, values, rewards = L // 2, [], [], []
    for t in range(20):
        logits, v = net(obs(s))
        dist = torch.distributions.Categorical(logits=logits)
        a = dist.sample()
        logps.append(dist.log_prob(a))
        values.append(v)
        s = s + (1 if a.item() == 1 else -1)
        r = 1.0 if s == L - 1 else (-1.0 if s == 0 else 0.0)
        rewards.append(r)
        if s in (0, L - 1):
            break
    ret, returns = 0.0, []
    for r in reversed(rewards):
        ret = r + GAMMA * ret
        returns.insert(0, ret)
    returns = torch.tensor(returns)
    values = torch.stack(values)
    logps = torch.stack(logps)
    advantage = returns - values  # BUG-LINE
    policy_loss = -(logps * advantage).mean()
    value_loss = F.mse_loss(values, returns)
    loss = policy_loss + 0.5 * value_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if episode % 40 == 0:
        print(f"episode {episode} len {len(rewards)} return {sum(rewards):.1f} vloss {value_loss.item():.4f}")
with torch.no_grad():
    vals = [round(net(obs(s))[1].item(), 3) for s in range(1, L - 1)]
    probs = [round(F.softmax(net(obs(s))[0], -1)[1].item(), 3) for s in range(1, L - 1)]
print("V(s):", vals)
print("P(right|s):", probs)
