"""A T5 fine-tuning loop passes ``decoder_input_ids=labels`` together with ``labels``. Because decoder inputs
are given, T5 does not shift the labels right, so at position t the decoder sees the very token it must
predict: the loss collapses towards zero by copying, and generation later produces gibberish. Nothing fails.

Source: https://github.com/huggingface/transformers/issues/11977
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration
from transformers.utils import logging

logging.set_verbosity_error()
torch.manual_seed(0)
config = T5Config(
    vocab_size=100,
    d_model=32,
    d_kv=8,
    d_ff=64,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=4,
    decoder_start_token_id=0,
    pad_token_id=0,
    eos_token_id=1,
)
model = T5ForConditionalGeneration(config)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
src = torch.randint(2, 100, (32, 12))
tgt = torch.flip(src[:, :8], dims=[1])
for i in range(0, 32, 8):
    labels = tgt[i : i + 8]
    out = model(input_ids=src[i : i + 8], decoder_input_ids=labels, labels=labels)  # BUG-LINE
    opt.zero_grad()
    out.loss.backward()
    opt.step()
