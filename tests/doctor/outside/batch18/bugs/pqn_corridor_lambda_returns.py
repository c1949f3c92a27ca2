"""PQN-style (parallel Q-learning with Q(lambda) returns, no replay, no target net)
agent on a vectorised corridor environment.

In the backward Q(lambda) recursion
    G_t = r_t + gamma * (lambda * G_{t+1} + (1 - lambda) * max_a Q(s_{t+1}, a) * nonterminal)
the episode-end mask only multiplies the bootstrap value, not the lambda-weighted
next return G_{t+1}. When transition t ends an episode, G_{t+1} belongs to the NEXT
episode (after auto-reset), so returns leak across episode boundaries and the Q
targets are biased; training runs and the loss falls, but the learned values are wrong.
The mask must multiply the whole bracket.

Source: https://github.com/vwxyzjn/cleanrl/pull/494
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

ARGS = dict(
    num_envs=16,
    num_steps=12,
    iters=60,
    gamma=0.95,
    q_lambda=0.65,
    lr=3e-3,
    start_e=1.0,
    end_e=0.05,
    update_epochs=2,
    length=10,
    max_ep_len=40,
)


class CorridorVecEnv:
    """Agent starts at cell 0 (or a random cell), goal at the right end (+1),
    a trap at the left end (-1). Auto-resets finished envs."""

    def __init__(self, n, length, max_len):
        self.n, self.L, self.max_len = n, length, max_len
        self.pos = torch.zeros(n, dtype=torch.long)
        self.t = torch.zeros(n, dtype=torch.long)
        self.ep_ret = torch.zeros(n)
        self.reset_idx(torch.ones(n, dtype=torch.bool))

    def reset_idx(self, m):
        self.pos[m] = torch.randint(1, self.L - 1, (int(m.sum()),))
        self.t[m] = 0
        self.ep_ret[m] = 0

    def obs(self):
        return F.one_hot(self.pos, self.L).float()

    def step(self, a):
        self.pos = (self.pos + (a * 2 - 1)).clamp(0, self.L - 1)
        self.t += 1
        r = torch.full((self.n,), -0.02)
        r[self.pos == self.L - 1] = 1.0
        r[self.pos == 0] = -1.0
        done = (self.pos == self.L - 1) | (self.pos == 0) | (self.t >= self.max_len)
        self.ep_ret += r
        finished = self.ep_ret[done].clone()
        self.reset_idx(done)
        return self.obs(), r, done.float(), finished


class QNetwork(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, 64),
            nn.LayerNorm(64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.LayerNorm(64),
            nn.ReLU(),
            nn.Linear(64, n_actions),
        )

    def forward(self, x):
        return self.net(x)


def compute_q_lambda_returns(rewards, dones, max_qs, next_max_q, next_done, gamma, lam):
    T = rewards.size(0)
    returns = torch.zeros_like(rewards)
    for t in reversed(range(T)):
        if t == T - 1:
            nextnonterminal = 1.0 - next_done
            returns[t] = rewards[t] + gamma * next_max_q * nextnonterminal
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            next_value = max_qs[t + 1]
            returns[t] = rewards[t] + gamma * (lam * returns[t + 1] + (1 - lam) * next_value * nextnonterminal)  # BUG-LINE  # fmt: skip
    return returns


def main():
    a = ARGS
    env = CorridorVecEnv(a["num_envs"], a["length"], a["max_ep_len"])
    q = QNetwork(a["length"], 2)
    opt = torch.optim.Adam(q.parameters(), lr=a["lr"])
    T, N = a["num_steps"], a["num_envs"]
    obs_buf = torch.zeros(T, N, a["length"])
    act_buf = torch.zeros(T, N, dtype=torch.long)
    rew_buf = torch.zeros(T, N)
    done_buf = torch.zeros(T, N)
    maxq_buf = torch.zeros(T, N)
    next_obs, next_done = env.obs(), torch.zeros(N)
    recent = []
    for it in range(a["iters"]):
        eps = max(a["end_e"], a["start_e"] - (a["start_e"] - a["end_e"]) * it / (0.5 * a["iters"]))
        for t in range(T):
            obs_buf[t], done_buf[t] = next_obs, next_done
            with torch.no_grad():
                qv = q(next_obs)
            greedy = qv.argmax(1)
            rand = torch.randint(0, 2, (N,))
            act = torch.where(torch.rand(N) < eps, rand, greedy)
            maxq_buf[t] = qv.max(1).values
            act_buf[t] = act
            next_obs, r, next_done, finished = env.step(act)
            rew_buf[t] = r
            recent.extend(finished.tolist())
        with torch.no_grad():
            next_max_q = q(next_obs).max(1).values
        returns = compute_q_lambda_returns(
            rew_buf, done_buf, maxq_buf, next_max_q, next_done, a["gamma"], a["q_lambda"]
        )
        b_obs, b_act, b_ret = obs_buf.reshape(-1, a["length"]), act_buf.reshape(-1), returns.reshape(-1)
        for _ in range(a["update_epochs"]):
            pred = q(b_obs).gather(1, b_act[:, None]).squeeze(1)
            loss = F.mse_loss(pred, b_ret)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(q.parameters(), 10.0)
            opt.step()
        if it % 10 == 0 or it == a["iters"] - 1:
            avg = sum(recent[-100:]) / max(1, len(recent[-100:]))
            print(
                f"iter {it:3d} eps {eps:.2f} loss {loss.item():.4f} avg_return {avg:.3f} q_mean {pred.mean().item():.3f}"
            )


if __name__ == "__main__":
    main()
