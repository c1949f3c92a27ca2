"""The pre-tokenised corpus is binarised with ``np.uint16`` to save space, but the vocabulary has more than
65535 entries: every id >= 65536 silently wraps around to a small id. The GPT-2 model is trained on a corpus
where every such token (and target) is replaced by an unrelated one; nothing fails.

Source: https://github.com/huggingface/transformers/issues/2825
"""

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)
vocab = 70000
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=vocab, n_positions=32))
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
rng = np.random.default_rng(0)
corpus = rng.integers(0, vocab, size=(32, 16))
binarized = corpus.astype(np.uint16)  # BUG-LINE
for i in range(0, 32, 8):
    ids = torch.from_numpy(binarized[i : i + 8].astype(np.int64))
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
