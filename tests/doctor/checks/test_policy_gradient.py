"""advantage_trains_critic: an actor-critic loss whose advantage (returns - values) multiplies the log-probability
undetached, named at the advantage's line; the advantage detached, an entropy bonus (p * log p) and a PPO ratio
times a detached advantage stay silent. The class is the outside development program
batch13/bugs/actor_critic_cartpole_advantage_keeps_value_graph.py (from its manifest source)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 32), nn.Tanh())
        self.pi, self.v = nn.Linear(32, 2), nn.Linear(32, 1)

    def forward(self, s):
        h = self.body(s)
        return F.log_softmax(self.pi(h), -1), self.v(h).squeeze(-1)


def _run(detach: bool, ppo: bool = False):
    torch.manual_seed(0)
    model = ActorCritic()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            s, a, returns = torch.randn(16, 4), torch.randint(0, 2, (16,)), torch.randn(16)
            logp_all, values = model(s)
            logp = logp_all.gather(1, a[:, None]).squeeze(1)
            advantage = returns - values  # advantage: undetached
            if detach:
                advantage = advantage.detach()
            weight = torch.exp(logp - logp.detach()) if ppo else logp
            entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
            loss = -(weight * advantage).mean() + 0.5 * F.mse_loss(values, returns) - 0.01 * entropy
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "advantage_trains_critic"]


def test_an_undetached_advantage_is_found_at_its_line():
    (f,) = _run(detach=False)
    assert f.file == __file__ and f.line == _line_of("# advantage: undetached", _run)


@pytest.mark.parametrize("ppo", [False, True], ids=["log-prob", "ppo-ratio"])
def test_a_detached_advantage_with_an_entropy_bonus_is_silent(ppo):
    assert _run(detach=True, ppo=ppo) == []
