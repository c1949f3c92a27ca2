"""A DQN agent builds its "target network" by moving the same model object to the device twice
(``target_net = model.to(device)``), so policy and target are one module. The bootstrap target then moves with
every update (it is just the online network), and the copy of parameters into the target is a no-op. Training
runs normally but the stabilising target network does not exist.

Source: https://github.com/datawhalechina/easy-rl/issues/140
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
device = torch.device("cpu")
model = nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Linear(64, 3))
policy_net = model.to(device)
target_net = model.to(device)  # BUG-LINE
target_net.load_state_dict(policy_net.state_dict())
opt = torch.optim.Adam(policy_net.parameters(), lr=1e-3)

gamma = 0.99
for _step in range(6):
    s = torch.randn(32, 6)
    a = torch.randint(0, 3, (32,))
    r = torch.randn(32)
    s2 = torch.randn(32, 6)
    done = (torch.rand(32) < 0.1).float()
    q = policy_net(s).gather(1, a[:, None]).squeeze(1)
    with torch.no_grad():
        target = r + gamma * (1 - done) * target_net(s2).max(1).values
    loss = F.smooth_l1_loss(q, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
