"""ELECTRA-style pretraining: small MLM generator + replaced-token-detection discriminator.

Modelled on the question of how the discriminator loss is kept from flowing into
the generator: replacement tokens are *sampled* from the generator's softmax inside
torch.no_grad(), so the discriminator loss cannot reach the generator except through
the shared token embeddings. Unusual but intended: two models and two losses
combined with a 1:50 weight, a single optimizer over the union of parameters
(embeddings counted once), the generator's sampled tokens detached on purpose,
positions where the generator guessed the original token labelled "original", and a
bidirectional encoder for both models.

Source: https://github.com/richarddwang/electra_pytorch/issues/8
"""

import torch
from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, MASK, CLS = 40, 12, 1, 2
gen = ElectraForMaskedLM(
    ElectraConfig(
        vocab_size=V,
        embedding_size=32,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=T,
    )
)
disc = ElectraForPreTraining(
    ElectraConfig(
        vocab_size=V,
        embedding_size=32,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=T,
    )
)
disc.electra.embeddings = gen.electra.embeddings  # tie embedding tables

params = {id(p): p for m in (gen, disc) for p in m.parameters()}
opt = torch.optim.AdamW(list(params.values()), lr=3e-3)


def sentences(n):
    a, b = torch.randint(3, V, (n, 1)), torch.randint(3, V, (n, 1))
    ids = torch.where(torch.arange(T) % 2 == 0, a, b)  # "a b a b ..." sentences
    ids[:, 0] = CLS
    return ids


for step in range(140):
    orig = sentences(32)
    masked = torch.rand(orig.shape) < 0.25
    masked[:, 0] = False
    gen_in = orig.masked_fill(masked, MASK)
    gen_labels = orig.masked_fill(~masked, -100)
    g_out = gen(input_ids=gen_in, labels=gen_labels)

    with torch.no_grad():
        probs = torch.softmax(g_out.logits[masked], -1)
        sampled = torch.multinomial(probs, 1).squeeze(-1)
    disc_in = orig.clone()
    disc_in[masked] = sampled
    replaced = (disc_in != orig).long()
    d_out = disc(input_ids=disc_in, labels=replaced)

    loss = g_out.loss + 50.0 * d_out.loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(
            f"step {step:3d} gen {g_out.loss.item():.4f} disc {d_out.loss.item():.4f} "
            f"replaced frac {replaced.float().mean().item():.3f}"
        )
print(f"final total loss {loss.item():.4f}")
