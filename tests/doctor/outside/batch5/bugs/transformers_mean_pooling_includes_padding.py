"""Sentence embeddings are built by averaging ``last_hidden_state`` over the sequence axis after padding the
batch, without weighting by ``attention_mask``. Padding positions enter the mean, so a sentence's embedding
depends on how long the longest sentence in its batch is, and the classifier trains on padding noise.

Source: https://github.com/autoliuweijie/BERT-whitening-pytorch/issues/13
"""

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertConfig, BertModel
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)
config = BertConfig(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=32,
)
encoder = BertModel(config)
head = nn.Linear(32, 2)
opt = torch.optim.AdamW(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
for _step in range(5):
    lengths = torch.randint(3, 17, (8,))
    ids = torch.randint(5, 100, (8, 16))
    mask = (torch.arange(16)[None] < lengths[:, None]).long()
    ids = ids * mask
    y = (lengths > 9).long()
    out = encoder(input_ids=ids, attention_mask=mask)
    sent = out.last_hidden_state.mean(dim=1)  # BUG-LINE
    loss = F.cross_entropy(head(sent), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
