"""Advantage actor-critic with a shared body and a detached advantage (correct).

Unusual but correct: actor and critic share one torso and are trained with a
single summed loss and one optimizer.  The advantage used in the policy-gradient
term is computed from ``values.detach()`` and bootstrapped n-step returns that
are built under ``no_grad``, so the policy loss cannot push the critic (the
problem fixed in the report); the critic is trained only by its own value loss.
An entropy bonus keeps exploration.  The environment is a vectorised chain
world (32 copies stepped with tensor ops).

Source: https://github.com/astariul/encode-attend-navigate-pytorch/pull/3
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(0)
torch.set_num_threads(2)
torch.distributions.Distribution.set_default_validate_args(False)

N_ENVS, N_CELLS, MAX_T, N_STEPS, GAMMA = 32, 6, 15, 5, 0.95


class VecChain:
    def __init__(self):
        self.pos = torch.zeros(N_ENVS, dtype=torch.long)
        self.t = torch.zeros(N_ENVS, dtype=torch.long)

    def obs(self):
        return F.one_hot(self.pos, N_CELLS).float()

    def step(self, a):
        self.pos = (self.pos + (a * 2 - 1)).clamp(0, N_CELLS - 1)
        self.t += 1
        goal = self.pos == N_CELLS - 1
        reward = torch.where(goal, torch.tensor(1.0), torch.tensor(-0.02))
        done = goal | (self.t >= MAX_T)
        self.pos = torch.where(done, torch.zeros_like(self.pos), self.pos)
        self.t = torch.where(done, torch.zeros_like(self.t), self.t)
        return self.obs(), reward, done


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(N_CELLS, 64), nn.Tanh())
        self.pi = nn.Linear(64, 2)
        self.v = nn.Linear(64, 1)

    def forward(self, s):
        h = self.body(s)
        return Categorical(logits=self.pi(h)), self.v(h).squeeze(-1)


def main():
    env = VecChain()
    net = ActorCritic()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    s = env.obs()
    finished_rewards = []
    running = torch.zeros(N_ENVS)
    for update in range(70):
        logps, values, rewards, dones, ents = [], [], [], [], []
        for _ in range(N_STEPS):
            dist, v = net(s)
            a = dist.sample()
            s, r, d = env.step(a)
            logps.append(dist.log_prob(a))
            values.append(v)
            ents.append(dist.entropy())
            rewards.append(r)
            dones.append(d.float())
            running += r
            finished_rewards.extend(running[d].tolist())
            running = torch.where(d, torch.zeros_like(running), running)
        with torch.no_grad():
            _, ret = net(s)
            returns = []
            for r, d in zip(reversed(rewards), reversed(dones)):
                ret = r + GAMMA * ret * (1.0 - d)
                returns.append(ret)
            returns = torch.stack(returns[::-1])
        values = torch.stack(values)
        adv = returns - values.detach()
        policy_loss = -(torch.stack(logps) * adv).mean()
        value_loss = F.mse_loss(values, returns)
        loss = policy_loss + 0.5 * value_loss - 0.01 * torch.stack(ents).mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 0.5)
        opt.step()
        if update % 14 == 0 or update == 69:
            recent = finished_rewards[-64:]
            avg = sum(recent) / max(1, len(recent))
            print(f"update {update:3d} episode return {avg:.3f} value loss {value_loss.item():.4f}")


if __name__ == "__main__":
    main()
