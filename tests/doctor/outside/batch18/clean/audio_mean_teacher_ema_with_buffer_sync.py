"""Semi-supervised audio tagger with a mean-teacher EMA network whose buffers are synced explicitly.

Unusual but correct: two copies of the CNN.  The student is trained with
cross-entropy on a small labelled subset plus a consistency loss towards the
teacher's (detached) predictions on noisy unlabelled clips.  The teacher is never
trained by an optimizer: after every student step its parameters are updated as
an exponential moving average of the student's, and - because the teacher only
runs in eval mode and would otherwise keep stale BatchNorm statistics - its
buffers (running_mean / running_var / num_batches_tracked) are copied from the
student after each update.  The teacher's output is a stop-gradient target.

Source: https://github.com/facebookresearch/moco/issues/70
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_CLASSES, N_MELS, N_FRAMES = 4, 16, 24
CFG = {"steps": 80, "lab_batch": 16, "unlab_batch": 32, "lr": 3e-3, "ema": 0.95, "cons_weight": 2.0}


def clips(labels, noise=0.8):
    t = torch.arange(N_FRAMES).float().view(1, 1, -1)
    mel = torch.arange(N_MELS).float().view(1, -1, 1)
    lab = labels.float().view(-1, 1, 1)
    e = 6.0 * torch.exp(-0.5 * ((mel - (2 + 4 * lab)) / 1.2) ** 2) * (1 + 0.5 * torch.sin(t * (0.3 + 0.2 * lab)))
    return (e + 5.0 + noise * torch.randn(len(labels), N_MELS, N_FRAMES)).unsqueeze(1)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(16, N_CLASSES)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


@torch.no_grad()
def update_teacher(teacher, student, decay):
    for t_p, s_p in zip(teacher.parameters(), student.parameters()):
        t_p.mul_(decay).add_(s_p, alpha=1 - decay)
    for t_b, s_b in zip(teacher.buffers(), student.buffers()):
        t_b.copy_(s_b)


def main():
    student = Tagger()
    teacher = copy.deepcopy(student).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam(student.parameters(), lr=CFG["lr"])
    lab_y = torch.randint(0, N_CLASSES, (64,))
    lab_x = clips(lab_y)
    yv = torch.randint(0, N_CLASSES, (256,))
    xv = clips(yv)
    for step in range(CFG["steps"]):
        idx = torch.randint(0, 64, (CFG["lab_batch"],))
        x_l, y_l = lab_x[idx], lab_y[idx]
        x_u = clips(torch.randint(0, N_CLASSES, (CFG["unlab_batch"],)))
        sup = F.cross_entropy(student(x_l), y_l)
        with torch.no_grad():
            target = F.softmax(teacher(x_u + 0.3 * torch.randn_like(x_u)), dim=-1)
        cons = F.mse_loss(F.softmax(student(x_u + 0.3 * torch.randn_like(x_u)), dim=-1), target)
        loss = sup + CFG["cons_weight"] * cons
        opt.zero_grad()
        loss.backward()
        opt.step()
        update_teacher(teacher, student, CFG["ema"])
        if step % 20 == 0 or step == CFG["steps"] - 1:
            with torch.no_grad():
                student.eval()
                s_acc = (student(xv).argmax(-1) == yv).float().mean().item()
                student.train()
                t_acc = (teacher(xv).argmax(-1) == yv).float().mean().item()
            print(
                f"step {step:3d} sup {sup.item():.4f} cons {cons.item():.4f} "
                f"acc student {s_acc:.3f} teacher {t_acc:.3f}"
            )


if __name__ == "__main__":
    main()
