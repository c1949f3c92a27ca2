"""Self-distillation KL loss passes student probabilities (softmax) where kl_div expects log-probabilities.

F.kl_div(input, target) computes target * (log target - input), assuming input is already in
log space. Feeding softmax outputs makes the loss wrong (even negative) and the gradient pushes
the student the wrong way from the first step.
Source: https://github.com/microsoft/ProDA/issues/43
"""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
teacher = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5))
student = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5))
teacher.eval()
opt = torch.optim.SGD(student.parameters(), lr=0.1)

for _step in range(8):
    x = torch.randn(16, 10)
    with torch.no_grad():
        t_prob = F.softmax(teacher(x), dim=1)
    s_out = F.softmax(student(x), dim=1)  # BUG-LINE
    loss = F.kl_div(s_out, t_prob, reduction="batchmean")
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"kd loss {loss.item():.4f}")
