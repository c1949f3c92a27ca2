"""Temperature-scaled knowledge distillation using kl_div with log_target=True.

Unusual: both student and teacher are passed as log-probabilities (log_target=True), the loss
is multiplied by T^2, and the teacher runs under no_grad in eval mode while the student trains.
Source: https://github.com/lucidrains/vit-pytorch/issues/289
"""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
teacher = torch.nn.Sequential(torch.nn.Linear(10, 64), torch.nn.ReLU(), torch.nn.Linear(64, 5)).eval()
student = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5))
opt = torch.optim.Adam(student.parameters(), lr=1e-2)
T, alpha = 4.0, 0.7
for _step in range(8):
    x = torch.randn(32, 10)
    y = torch.randint(0, 5, (32,))
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = student(x)
    kd = F.kl_div(
        F.log_softmax(s_logits / T, dim=-1), F.log_softmax(t_logits / T, dim=-1), reduction="batchmean", log_target=True
    )
    loss = alpha * kd * T * T + (1 - alpha) * F.cross_entropy(s_logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"kd loss {loss.item():.4f}")
