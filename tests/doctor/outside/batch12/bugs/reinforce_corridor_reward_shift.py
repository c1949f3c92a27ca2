"""REINFORCE with reward-to-go on a small corridor environment simulated in torch (batch of parallel episodes). The rollout buffer should store, for each step, the reward obtained after taking that step's action; here it stores the reward received on the previous transition (a stale variable), so every reward is attached to the action one step earlier and the first action of every episode always gets reward 0. The returns are shifted by one step, the policy still trains and the loss looks normal, so nothing signals the misalignment; it is wrong from the very first update.
Source: https://github.com/openai/spinningup/issues/50
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, L, GAMMA = 64, 12, 6, 0.97

policy = nn.Sequential(nn.Linear(L, 32), nn.Tanh(), nn.Linear(32, 2))
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)


def obs_of(pos):
    return torch.nn.functional.one_hot(pos, L).float()


for update in range(10):
    pos = torch.zeros(B, dtype=torch.long)
    logps, rewards = [], []
    prev_r = torch.zeros(B)
    for t in range(T):
        dist = torch.distributions.Categorical(logits=policy(obs_of(pos)))
        a = dist.sample()
        logps.append(dist.log_prob(a))
        new_pos = torch.clamp(pos + 2 * a - 1, 0, L - 1)
        r = (new_pos == L - 1).float() - 0.05 * (a == 0).float()
        rewards.append(prev_r)  # BUG-LINE
        prev_r = r
        pos = torch.where(new_pos == L - 1, torch.zeros_like(new_pos), new_pos)
    rewards = torch.stack(rewards)  # (T, B)
    returns = torch.zeros_like(rewards)
    running = torch.zeros(B)
    for t in reversed(range(T)):
        running = rewards[t] + GAMMA * running
        returns[t] = running
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    loss = -(torch.stack(logps) * returns).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"update {update} loss {loss.item():.4f} mean_reward {rewards.mean().item():.4f}")

print("checksum", round(sum(p.sum().item() for p in policy.parameters()), 6))
