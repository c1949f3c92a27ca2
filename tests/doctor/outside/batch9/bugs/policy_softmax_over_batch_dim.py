"""Policy network ends with Softmax(dim=0), which normalises across the batch instead of across actions.

dim=0 is fine for a single unbatched state, but the REINFORCE update feeds a batch of states:
the probabilities then sum to 1 over the batch for each action, so log-probabilities and the
policy gradient are wrong from the first batched update.
Source: https://github.com/DeepReinforcementLearning/DeepReinforcementLearningInAction/issues/32
"""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(4, 32),
    torch.nn.LeakyReLU(),
    torch.nn.Linear(32, 2),
    torch.nn.Softmax(dim=0),  # BUG-LINE
)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

for _episode in range(8):
    states = torch.randn(10, 4)
    actions = torch.randint(0, 2, (10,))
    returns = torch.linspace(1.0, 0.1, 10)
    probs = model(states)
    prob_taken = probs.gather(1, actions[:, None]).squeeze(1)
    loss = -(returns * torch.log(prob_taken)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"policy loss {loss.item():.4f}")
