"""PPO probability ratio is always exactly 1, so the clipped objective never clips.

The agent's ``learn`` method computes the "old" action log-probabilities from the
current actor at the start of every optimisation epoch instead of using the
log-probabilities stored when the rollout was collected.  Because the old
log-probs are recomputed (and detached) from the very parameters being updated,
``ratio = exp(new - old)`` is identically 1 at each epoch: the PPO clip is never
active, and the update degenerates into several unconstrained vanilla
policy-gradient steps on the same batch.  Training runs and the return may even
go up, but the trust-region behaviour PPO is supposed to provide is silently
gone (clip fraction stays at 0).

Source: https://github.com/abhisheksuran/Reinforcement_Learning/issues/4
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(0)
torch.set_num_threads(2)
torch.distributions.Distribution.set_default_validate_args(False)


class ChainEnv:
    """Walk on a chain of N cells; reward 1 for reaching the right end."""

    def __init__(self, n=8, max_len=20):
        self.n, self.max_len = n, max_len

    def reset(self):
        self.pos, self.t = 0, 0
        return self._obs()

    def _obs(self):
        o = torch.zeros(self.n)
        o[self.pos] = 1.0
        return o

    def step(self, a):
        self.t += 1
        self.pos = max(0, min(self.n - 1, self.pos + (1 if a == 1 else -1)))
        done = self.pos == self.n - 1 or self.t >= self.max_len
        r = 1.0 if self.pos == self.n - 1 else -0.01
        return self._obs(), r, done


class Actor(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n, 64), nn.Tanh(), nn.Linear(64, 2))

    def forward(self, s):
        return Categorical(logits=self.net(s))


class Critic(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n, 64), nn.Tanh(), nn.Linear(64, 1))

    def forward(self, s):
        return self.net(s).squeeze(-1)


class Agent:
    def __init__(self, n, gamma=0.99, clip=0.2, epochs=6):
        self.actor, self.critic = Actor(n), Critic(n)
        self.a_opt = torch.optim.Adam(self.actor.parameters(), lr=3e-3)
        self.c_opt = torch.optim.Adam(self.critic.parameters(), lr=3e-3)
        self.gamma, self.clip, self.epochs = gamma, clip, epochs

    @torch.no_grad()
    def act(self, s):
        dist = self.actor(s)
        a = dist.sample()
        return a.item(), dist.log_prob(a).item()

    def learn(self, states, actions, rollout_logp, adv, returns):
        clipped = 0.0
        for _ in range(self.epochs):
            dist = self.actor(states)
            new_logp = dist.log_prob(actions)
            old_logp = self.actor(states).log_prob(actions).detach()  # BUG-LINE
            ratio = torch.exp(new_logp - old_logp)
            s1 = ratio * adv
            s2 = torch.clamp(ratio, 1 - self.clip, 1 + self.clip) * adv
            a_loss = -torch.min(s1, s2).mean() - 0.01 * dist.entropy().mean()
            self.a_opt.zero_grad()
            a_loss.backward()
            self.a_opt.step()
            c_loss = F.mse_loss(self.critic(states), returns)
            self.c_opt.zero_grad()
            c_loss.backward()
            self.c_opt.step()
            clipped += ((ratio - 1).abs() > self.clip).float().mean().item()
        return a_loss.item(), c_loss.item(), clipped / self.epochs


def rollout(env, agent, n_episodes=4):
    S, A, LP, R, ep_returns = [], [], [], [], []
    for _ in range(n_episodes):
        s, done, rews = env.reset(), False, []
        while not done:
            a, lp = agent.act(s)
            s2, r, done = env.step(a)
            S.append(s)
            A.append(a)
            LP.append(lp)
            rews.append(r)
            s = s2
        g, rets = 0.0, []
        for r in reversed(rews):
            g = r + agent.gamma * g
            rets.append(g)
        R.extend(reversed(rets))
        ep_returns.append(sum(rews))
    return (
        torch.stack(S),
        torch.tensor(A),
        torch.tensor(LP),
        torch.tensor(R, dtype=torch.float32),
        sum(ep_returns) / len(ep_returns),
    )


def main():
    env = ChainEnv()
    agent = Agent(env.n)
    for it in range(20):
        S, A, LP, R, avg_ret = rollout(env, agent)
        with torch.no_grad():
            adv = R - agent.critic(S)
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        a_loss, c_loss, clip_frac = agent.learn(S, A, LP, adv, R)
        if it % 5 == 0 or it == 19:
            print(f"iter {it:3d} return {avg_ret:.3f} actor {a_loss:.4f} critic {c_loss:.4f} clipfrac {clip_frac:.3f}")


if __name__ == "__main__":
    main()
