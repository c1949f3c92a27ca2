"""Single-scale anchor-based detector (RPN-like head) on synthetic images with one box each.

Anchors are labelled positive (IoU > 0.5 with the ground-truth box) or negative (IoU < 0.3),
and a fixed-size minibatch of anchors is sampled for the classification loss ("rpn_keep").
The box-regression loss must only use the sampled *foreground* anchors ("fg_keep"), but the
regression predictions are gathered with rpn_keep, so background anchors are also regressed
towards the offsets of whatever ground-truth box they overlap most with (often none at all).
Training runs and both losses fall, but the regressor is dominated by meaningless targets and
the localisation of positives is poor.

Source: https://github.com/eragonruan/text-detection-ctpn/issues/334
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

IMG, STRIDE = 32, 4
FEAT = IMG // STRIDE
ANCHOR_SIZES = (6.0, 10.0, 14.0)
RPN_BATCH = 64


def make_anchors():
    ys, xs = torch.meshgrid(torch.arange(FEAT), torch.arange(FEAT), indexing="ij")
    cy, cx = (ys.float() + 0.5) * STRIDE, (xs.float() + 0.5) * STRIDE
    anchors = []
    for s in ANCHOR_SIZES:
        anchors.append(torch.stack([cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2], dim=-1))
    return torch.stack(anchors, dim=2).reshape(-1, 4)  # (H*W*A, 4) in (y, x, a) order


def box_iou(a, b):
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])
    return inter / (area(a)[:, None] + area(b)[None] - inter)


def encode(gt, anchors):
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = anchors[:, 0] + aw / 2, anchors[:, 1] + ah / 2
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    gx, gy = gt[:, 0] + gw / 2, gt[:, 1] + gh / 2
    return torch.stack([(gx - ax) / aw, (gy - ay) / ah, (gw / aw).log(), (gh / ah).log()], dim=1)


def make_sample(g):
    img = 0.1 * torch.randn(1, IMG, IMG, generator=g)
    s = float(torch.randint(6, 15, (1,), generator=g))
    x0, y0 = [float(v) for v in torch.randint(0, IMG - int(s), (2,), generator=g)]
    img[0, int(y0) : int(y0 + s), int(x0) : int(x0 + s)] += 1.0
    return img, torch.tensor([[x0, y0, x0 + s, y0 + s]])


class RPNHead(nn.Module):
    def __init__(self, num_anchors=len(ANCHOR_SIZES)):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, 2, 1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, 2, 1),
            nn.ReLU(),
            nn.Conv2d(32, 32, 3, 1, 1),
            nn.ReLU(),
        )
        self.cls = nn.Conv2d(32, num_anchors, 1)
        self.reg = nn.Conv2d(32, num_anchors * 4, 1)

    def forward(self, x):
        f = self.body(x)
        n = x.shape[0]
        cls = self.cls(f).permute(0, 2, 3, 1).reshape(n, -1)
        reg = self.reg(f).permute(0, 2, 3, 1).reshape(n, -1, 4)
        return cls, reg


def rpn_targets(anchors, gt, g):
    iou = box_iou(anchors, gt)
    max_iou, argmax = iou.max(dim=1)
    labels = torch.full((anchors.shape[0],), -1)
    labels[max_iou < 0.3] = 0
    labels[max_iou >= 0.5] = 1
    labels[iou.argmax(dim=0)] = 1
    fg = (labels == 1).nonzero().squeeze(1)
    bg = (labels == 0).nonzero().squeeze(1)
    bg = bg[torch.randperm(bg.numel(), generator=g)[: RPN_BATCH - fg.numel()]]
    rpn_keep = torch.cat([fg, bg])
    fg_keep = fg
    bbox_targets = encode(gt[argmax], anchors)
    return labels, rpn_keep, fg_keep, bbox_targets


def main():
    g = torch.Generator().manual_seed(0)
    anchors = make_anchors()
    data = [make_sample(g) for _ in range(128)]
    model = RPNHead()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(80):
        batch = [data[int(i)] for i in torch.randint(0, len(data), (8,), generator=g)]
        imgs = torch.stack([b[0] for b in batch])
        cls, reg = model(imgs)
        cls_losses, reg_losses = [], []
        for i, (_, gt) in enumerate(batch):
            labels, rpn_keep, fg_keep, bbox_targets = rpn_targets(anchors, gt, g)
            cls_losses.append(F.binary_cross_entropy_with_logits(cls[i, rpn_keep], labels[rpn_keep].float()))
            rpn_bbox_pred = reg[i, rpn_keep]  # BUG-LINE
            rpn_bbox_targets = bbox_targets[rpn_keep]
            reg_losses.append(
                F.smooth_l1_loss(rpn_bbox_pred, rpn_bbox_targets, beta=1 / 9, reduction="sum") / max(fg_keep.numel(), 1)
            )
        loss_cls, loss_reg = torch.stack(cls_losses).mean(), torch.stack(reg_losses).mean()
        loss = loss_cls + loss_reg
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == 79:
            print(f"step {step:3d} cls {loss_cls.item():.4f} reg {loss_reg.item():.4f}")


if __name__ == "__main__":
    main()
