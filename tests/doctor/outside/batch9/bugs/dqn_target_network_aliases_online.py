"""After loading the online weights, the target-network variable is re-pointed at the online network.

The code copies the online state_dict into the target network and then also assigns
target = online, so both names refer to the same module. The bootstrapped TD target is computed
with the network being trained, which removes the stabilising frozen target from the first update.
Source: https://github.com/andri27-ts/Reinforcement-Learning/issues/14
"""

import torch
import torch.nn.functional as F

torch.manual_seed(0)


def make_net():
    return torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))


online = make_net()
target = make_net()
target.load_state_dict(online.state_dict())
target = online  # BUG-LINE
opt = torch.optim.Adam(online.parameters(), lr=1e-3)
gamma = 0.99

for _step in range(8):
    s = torch.randn(32, 4)
    a = torch.randint(0, 2, (32,))
    r = torch.randn(32)
    s2 = torch.randn(32, 4)
    done = (torch.rand(32) < 0.1).float()
    q = online(s).gather(1, a[:, None]).squeeze(1)
    with torch.no_grad():
        q_next = target(s2).max(1).values
    y = r + gamma * (1 - done) * q_next
    loss = F.smooth_l1_loss(q, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"td loss {loss.item():.4f}")
