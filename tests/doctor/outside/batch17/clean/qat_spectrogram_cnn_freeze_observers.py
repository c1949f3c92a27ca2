"""Quantization-aware training of a small spectrogram CNN with fused Conv-BN-ReLU, then int8 convert.

Unusual on purpose: after prepare_qat the forward pass goes through FakeQuantize modules (rounding
with a straight-through estimator), so weights are trained against their own int8 rounding. Part
way through training the schedule deliberately stops updating things: observers are disabled
(scales and zero points stay fixed) and BatchNorm running statistics are frozen via
freeze_bn_stats, while the weights keep training. The model runs in train() mode even after the BN
freeze, on purpose. At the end the model is converted to a real int8 model and evaluated. The
scheduled observer disabling / BN freezing follows the PR that added freeze-BN support for QAT.

Source: https://github.com/pytorch/pytorch/pull/26624
"""

import warnings

import torch
import torch.ao.quantization as tq
import torch.nn as nn
from torch.ao.nn.intrinsic.qat import freeze_bn_stats

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning)
torch.manual_seed(0)
torch.set_num_threads(2)

N_MELS, FRAMES, N_CLS = 24, 24, 4


def synth(bs=32):
    y = torch.randint(0, N_CLS, (bs,))
    x = 1.5 * torch.randn(bs, 1, N_MELS, FRAMES)
    for i, c in enumerate(y.tolist()):
        x[i, 0, 2 + 5 * c : 6 + 5 * c, :] += 0.6
        x[i, 0, :, 4 * c : 4 * c + 6] += 0.3
    return x, y


class SpecCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.relu2 = nn.ReLU()
        self.gap = nn.AdaptiveAvgPool2d(4)
        self.fc = nn.Linear(32 * 16, N_CLS)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.pool(self.relu1(self.bn1(self.conv1(x))))
        x = self.gap(self.relu2(self.bn2(self.conv2(x))))
        x = self.fc(torch.flatten(x, 1))
        return self.dequant(x)


def main():
    torch.backends.quantized.engine = "x86" if "x86" in torch.backends.quantized.supported_engines else "fbgemm"
    model = SpecCNN()
    model.train()
    model = tq.fuse_modules_qat(model, [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"]])
    model.qconfig = tq.get_default_qat_qconfig(torch.backends.quantized.engine)
    tq.prepare_qat(model, inplace=True)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(100):
        if step == 60:
            model.apply(tq.disable_observer)
        if step == 75:
            model.apply(freeze_bn_stats)
        x, y = synth()
        logits = model(x)
        loss = loss_fn(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == 99:
            acc = (logits.argmax(1) == y).float().mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} acc {acc:.2f}")
    model.eval()
    qmodel = tq.convert(model, inplace=False)
    x, y = synth(256)
    with torch.no_grad():
        acc_fq = (model(x).argmax(1) == y).float().mean().item()
        acc_int8 = (qmodel(x).argmax(1) == y).float().mean().item()
    print(f"fake-quant acc {acc_fq:.3f} int8 acc {acc_int8:.3f}")


if __name__ == "__main__":
    main()
