"""VQ-VAE (conv encoder/decoder, 32-entry codebook) on synthetic sprite images.

The Quantize module implements the straight-through estimator as
    quantized = inputs + (quantized - inputs)
without .detach() on the difference. Numerically the forward value is unchanged,
but d(quantized)/d(inputs) becomes 1 - 1 = 0 (the codebook lookup is not
differentiable w.r.t. the inputs), so the reconstruction gradient reaches the
codebook instead of being copied to the encoder. The encoder is then trained only by
the commitment term and never learns features useful for reconstruction; the loss
still decreases because decoder and codebook keep learning.

Source: https://github.com/NTU-AIoT-Lab/EfficientFi/issues/4
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)


class Quantize(nn.Module):
    def __init__(self, num_embeddings, dim, commitment_cost=0.25):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, dim)
        self.embedding.weight.data.uniform_(-1 / num_embeddings, 1 / num_embeddings)
        self.commitment_cost = commitment_cost

    def forward(self, inputs):
        # inputs: B, C, H, W -> B, H, W, C
        x = inputs.permute(0, 2, 3, 1).contiguous()
        flat = x.view(-1, x.size(-1))
        dist = (
            flat.pow(2).sum(1, keepdim=True)
            - 2 * flat @ self.embedding.weight.t()
            + self.embedding.weight.pow(2).sum(1)[None]
        )
        idx = dist.argmin(1)
        quantized = self.embedding(idx).view_as(x)
        e_latent_loss = F.mse_loss(quantized.detach(), x)
        q_latent_loss = F.mse_loss(quantized, x.detach())
        loss = q_latent_loss + self.commitment_cost * e_latent_loss
        quantized = x + (quantized - x)  # BUG-LINE
        perplexity = torch.exp(
            -(
                F.one_hot(idx, self.embedding.num_embeddings).float().mean(0)
                * torch.log(F.one_hot(idx, self.embedding.num_embeddings).float().mean(0) + 1e-10)
            ).sum()
        )
        return quantized.permute(0, 3, 1, 2).contiguous(), loss, perplexity


class VQVAE(nn.Module):
    def __init__(self, dim=16, codes=32):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, dim, 1)
        )
        self.vq = Quantize(codes, dim)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(dim, 32, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(32, 1, 4, 2, 1)
        )

    def forward(self, x):
        z = self.encoder(x)
        q, vq_loss, ppl = self.vq(z)
        return self.decoder(q), vq_loss, ppl


def make_sprites(n, size=16):
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size), indexing="ij")
    cx, cy = torch.rand(n) * 1.4 - 0.7, torch.rand(n) * 1.4 - 0.7
    r = torch.rand(n) * 0.25 + 0.15
    square = torch.rand(n) < 0.5
    circ = ((xx[None] - cx[:, None, None]) ** 2 + (yy[None] - cy[:, None, None]) ** 2) < r[:, None, None] ** 2
    sq = ((xx[None] - cx[:, None, None]).abs() < r[:, None, None]) & (
        (yy[None] - cy[:, None, None]).abs() < r[:, None, None]
    )
    img = torch.where(square[:, None, None], sq, circ).float()
    return img[:, None]


def main():
    data = make_sprites(2048)
    model = VQVAE()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(200):
        x = data[torch.randint(0, len(data), (64,))]
        x_hat, vq_loss, ppl = model(x)
        rec = F.mse_loss(x_hat, x)
        loss = rec + vq_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 40 == 0 or step == 199:
            print(
                f"step {step:3d} loss {loss.item():.4f} rec {rec.item():.4f} vq {vq_loss.item():.4f} perplexity {ppl.item():.2f}"
            )


if __name__ == "__main__":
    main()
