"""Synchronous n-step A2C with 16 parallel copies of a small goal-reaching line world.

The n-step value targets have shape (B,) while the critic output has shape
(B, 1). The advantage is computed as targets - values.detach(), which silently
broadcasts to a (B, B) matrix. Multiplied with the (B,) log-probabilities and
averaged, every action is weighted with its return minus the *batch-average*
value instead of its own state value, so the baseline no longer depends on the
state. Training runs, losses look reasonable, but learning is slower and noisier.

Source: https://github.com/PacktPublishing/Deep-Reinforcement-Learning-Hands-On/issues/74
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
np.random.seed(0)


class LineWorld:
    """Walk left/right on a line of 12 cells to reach a goal cell; -0.05 per step, +1 at the goal."""

    def __init__(self, seed=0):
        self.rng = np.random.RandomState(seed)

    def obs(self):
        o = np.zeros(24, dtype=np.float32)
        o[self.pos] = 1.0
        o[12 + self.goal] = 1.0
        return o

    def reset(self):
        self.pos, self.goal = self.rng.choice(12, size=2, replace=False)
        self.t = 0
        return self.obs()

    def step(self, a):
        self.pos = int(np.clip(self.pos + (1 if a == 1 else -1), 0, 11))
        self.t += 1
        if self.pos == self.goal:
            return self.obs(), 1.0, True
        return self.obs(), -0.05, self.t >= 30


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(24, 128), nn.ReLU())
        self.policy = nn.Linear(128, 2)
        self.value = nn.Linear(128, 1)

    def forward(self, x):
        h = self.body(x)
        return self.policy(h), self.value(h)


N_ENVS, N_STEPS, GAMMA = 16, 5, 0.99
envs = [LineWorld(seed=i) for i in range(N_ENVS)]
obs = np.stack([e.reset() for e in envs])
ep_lens = np.zeros(N_ENVS)
finished = []
net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)

for update in range(300):
    states, actions, rewards, dones = [], [], [], []
    for _ in range(N_STEPS):
        with torch.no_grad():
            logits, _ = net(torch.from_numpy(obs))
        acts = torch.distributions.Categorical(logits=logits).sample().numpy()
        states.append(obs.copy())
        actions.append(acts)
        step_r, step_d = [], []
        for i, e in enumerate(envs):
            o, r, d = e.step(int(acts[i]))
            ep_lens[i] += 1
            if d:
                finished.append(ep_lens[i])
                ep_lens[i] = 0
                o = e.reset()
            obs[i] = o
            step_r.append(r)
            step_d.append(float(d))
        rewards.append(step_r)
        dones.append(step_d)

    with torch.no_grad():
        _, last_v = net(torch.from_numpy(obs))
    ret = last_v.squeeze(1).numpy()
    targets = []
    for t in reversed(range(N_STEPS)):
        ret = np.array(rewards[t]) + GAMMA * ret * (1.0 - np.array(dones[t]))
        targets.insert(0, ret.copy())

    states_v = torch.tensor(np.concatenate(states))
    actions_v = torch.tensor(np.concatenate(actions))
    vals_ref_v = torch.tensor(np.concatenate(targets), dtype=torch.float32)

    logits_v, value_v = net(states_v)
    value_loss = F.mse_loss(value_v.squeeze(-1), vals_ref_v)
    log_prob_v = F.log_softmax(logits_v, dim=1)
    adv_v = vals_ref_v - value_v.detach()  # BUG-LINE
    log_prob_actions_v = adv_v * log_prob_v[torch.arange(len(actions_v)), actions_v]
    policy_loss = -log_prob_actions_v.mean()
    entropy = -(log_prob_v.exp() * log_prob_v).sum(dim=1).mean()
    loss = policy_loss + 0.5 * value_loss - 0.01 * entropy

    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(net.parameters(), 0.5)
    opt.step()

    if update % 50 == 0 or update == 299:
        recent = np.mean(finished[-20:]) if finished else 0.0
        print(
            f"update {update:3d}  value {value_loss.item():.4f}  policy {policy_loss.item():+.4f}  "
            f"entropy {entropy.item():.3f}  recent episode length {recent:6.1f}"
        )
