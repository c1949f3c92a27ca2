"""Unsupervised SimCSE on a tiny BERT encoder: dropout noise as the only augmentation.

Modelled on the SimCSE question about how the two views get different dropout
masks: the same batch is encoded by two *separate* forward passes in train mode, so
dropout differs between them. Unusual but intended: the model is called twice on
identical inputs per step; embeddings are mean-pooled over non-pad tokens; the loss is a cross-entropy over the batch-by-batch
cosine-similarity matrix (every other sentence in the batch is a negative, so
samples interact on purpose); the "labels" are just arange(batch); dropout must stay
on during training for the objective to be non-trivial; temperature 0.05.

Source: https://github.com/princeton-nlp/SimCSE/issues/229
"""

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T, PAD, CLS, TEMP = 60, 12, 0, 1, 0.05
cfg = BertConfig(
    vocab_size=V,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=T,
    pad_token_id=PAD,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
)
encoder = BertModel(cfg, add_pooling_layer=False)
opt = torch.optim.AdamW(encoder.parameters(), lr=1e-3)


def batch(n):
    lengths = torch.randint(5, T + 1, (n,))
    mask = (torch.arange(T) < lengths[:, None]).long()
    ids = torch.randint(2, V, (n, T)) * mask
    ids[:, 0] = CLS
    return ids, mask


def embed(ids, mask):
    h = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).float()
    return (h * m).sum(1) / m.sum(1)  # mean pooling over real tokens


encoder.train()
for step in range(60):
    ids, mask = batch(32)
    z1 = embed(ids, mask)
    z2 = embed(ids, mask)
    sim = F.cosine_similarity(z1.unsqueeze(1), z2.unsqueeze(0), dim=-1) / TEMP
    loss = F.cross_entropy(sim, torch.arange(sim.size(0)))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        acc = (sim.argmax(1) == torch.arange(sim.size(0))).float().mean().item()
        print(f"step {step:3d} loss {loss.item():.4f} positive-retrieval acc {acc:.2f}")
print(f"final loss {loss.item():.4f}")
