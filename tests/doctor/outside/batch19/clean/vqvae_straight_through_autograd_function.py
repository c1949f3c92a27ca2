"""VQ-VAE on small synthetic images with a custom autograd.Function for the straight-through
estimator (correct, unusual).

Nearest-codebook lookup is not differentiable. The quantizer here is a torch.autograd.Function
whose forward returns the selected codebook vectors and whose backward copies the decoder's
gradient unchanged to the encoder output (the "quantized = inputs + (quantized - inputs).detach()"
trick, written explicitly). The codebook itself is trained by a separate codebook loss with the
encoder output detached, and the encoder by a commitment loss with the codebook detached. So the
reconstruction loss reaches the encoder only through the custom backward, and the codebook only
through the codebook term, on purpose.

Source: https://github.com/zalandoresearch/pytorch-vq-vae/issues/6
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class StraightThroughQuantize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z_e, codebook):
        flat = z_e.permute(0, 2, 3, 1).reshape(-1, z_e.shape[1])
        dist = flat.pow(2).sum(1, keepdim=True) - 2 * flat @ codebook.t() + codebook.pow(2).sum(1)[None]
        idx = dist.argmin(1)
        z_q = codebook[idx].view(z_e.shape[0], z_e.shape[2], z_e.shape[3], -1).permute(0, 3, 1, 2)
        ctx.mark_non_differentiable(idx)
        return z_q.contiguous(), idx

    @staticmethod
    def backward(ctx, grad_zq, grad_idx):
        return grad_zq, None  # identity to the encoder; nothing to the codebook through this path


class VQVAE(nn.Module):
    def __init__(self, k=32, d=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 16, 4, 2, 1), nn.ReLU(), nn.Conv2d(16, d, 3, 1, 1))
        self.dec = nn.Sequential(nn.Conv2d(d, 16, 3, 1, 1), nn.ReLU(), nn.ConvTranspose2d(16, 1, 4, 2, 1))
        self.codebook = nn.Parameter(torch.randn(k, d) * 0.5)

    def forward(self, x):
        z_e = self.enc(x)
        z_q, idx = StraightThroughQuantize.apply(z_e, self.codebook)
        codebook_z = self.codebook[idx].view(z_e.shape[0], z_e.shape[2], z_e.shape[3], -1).permute(0, 3, 1, 2)
        codebook_loss = F.mse_loss(codebook_z, z_e.detach())
        commit_loss = F.mse_loss(z_e, codebook_z.detach())
        return self.dec(z_q), codebook_loss, commit_loss, idx


def make_images(n, g):
    x = torch.zeros(n, 1, 16, 16)
    for i in range(n):
        r, c = torch.randint(0, 12, (2,), generator=g).tolist()
        if i % 2:
            x[i, 0, r : r + 4, :] = 1.0
        else:
            x[i, 0, :, c : c + 4] = 1.0
    return x


def main():
    g = torch.Generator().manual_seed(0)
    data = make_images(512, g)
    model = VQVAE()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    beta = 0.25
    for step in range(100):
        x = data[torch.randint(0, len(data), (32,), generator=g)]
        recon, cb_loss, commit_loss, idx = model(x)
        rec_loss = F.mse_loss(recon, x)
        loss = rec_loss + cb_loss + beta * commit_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == 99:
            used = idx.unique().numel()
            print(f"step {step:3d} rec {rec_loss.item():.4f} codebook {cb_loss.item():.4f} codes used {used}")


if __name__ == "__main__":
    main()
