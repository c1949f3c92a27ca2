"""Single-object detector (box regression + class) with a ResNet-style FPN backbone
trained from scratch.

The helper resnet_fpn_backbone(trainable_layers=5) is documented as "5 means all
backbone layers are trainable". It freezes every parameter whose name does not start
with one of the selected prefixes, but the prefix list only has
layer4/layer3/layer2/layer1/conv1 - the stem BatchNorm 'bn1' is never in it. So even
with trainable_layers=5 the stem BN affine parameters are silently frozen at their
init values (weight=1, bias=0) for a randomly initialised backbone; nothing warns.

Source: https://github.com/pytorch/vision/issues/3394
"""

from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + idt)


class MiniResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 16, 2)
        self.layer3 = BasicBlock(16, 24, 2)
        self.layer4 = BasicBlock(24, 32, 2)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        c1 = self.layer1(x)
        c2 = self.layer2(c1)
        c3 = self.layer3(c2)
        c4 = self.layer4(c3)
        return OrderedDict([("0", c2), ("1", c3), ("2", c4)])


class FPN(nn.Module):
    def __init__(self, in_channels, out_ch=16):
        super().__init__()
        self.lateral = nn.ModuleList([nn.Conv2d(c, out_ch, 1) for c in in_channels])
        self.smooth = nn.ModuleList([nn.Conv2d(out_ch, out_ch, 3, padding=1) for _ in in_channels])

    def forward(self, feats):
        xs = list(feats.values())
        last = self.lateral[-1](xs[-1])
        outs = [self.smooth[-1](last)]
        for i in range(len(xs) - 2, -1, -1):
            lat = self.lateral[i](xs[i])
            last = lat + F.interpolate(last, size=lat.shape[-2:], mode="nearest")
            outs.insert(0, self.smooth[i](last))
        return outs


class BackboneWithFPN(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body
        self.fpn = FPN([16, 24, 32])

    def forward(self, x):
        return self.fpn(self.body(x))


def resnet_fpn_backbone(trainable_layers=3):
    assert 0 <= trainable_layers <= 5
    body = MiniResNet()
    layers_to_train = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable_layers]  # BUG-LINE
    for name, parameter in body.named_parameters():
        if all(not name.startswith(layer) for layer in layers_to_train):
            parameter.requires_grad_(False)
    return BackboneWithFPN(body)


class SingleBoxDetector(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.backbone = resnet_fpn_backbone(trainable_layers=5)
        self.cls_head = nn.Linear(16 * 3, num_classes)
        self.box_head = nn.Linear(16 * 3, 4)

    def forward(self, x):
        pooled = torch.cat([F.adaptive_avg_pool2d(f, 1).flatten(1) for f in self.backbone(x)], 1)
        return self.cls_head(pooled), torch.sigmoid(self.box_head(pooled))


def make_batch(n, num_classes=3, size=32):
    imgs = torch.randn(n, 3, size, size) * 0.3 + 2.0
    labels = torch.randint(0, num_classes, (n,))
    boxes = torch.zeros(n, 4)
    colors = torch.eye(3) * 3.0
    for i in range(n):
        w, h = torch.randint(6, 16, (2,)).tolist()
        x0 = torch.randint(0, size - w, (1,)).item()
        y0 = torch.randint(0, size - h, (1,)).item()
        imgs[i, :, y0 : y0 + h, x0 : x0 + w] += colors[labels[i]][:, None, None]
        boxes[i] = torch.tensor([(x0 + w / 2) / size, (y0 + h / 2) / size, w / size, h / size])
    return imgs, labels, boxes


def main():
    model = SingleBoxDetector(3)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=50, gamma=0.3)
    for step in range(70):
        imgs, labels, boxes = make_batch(16)
        logits, pred_boxes = model(imgs)
        loss_cls = F.cross_entropy(logits, labels)
        loss_box = F.smooth_l1_loss(pred_boxes, boxes, beta=0.05)
        loss = loss_cls + 5.0 * loss_box
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 15 == 0 or step == 69:
            print(f"step {step:3d} loss {loss.item():.4f} cls {loss_cls.item():.4f} box {loss_box.item():.4f}")


if __name__ == "__main__":
    main()
