"""Continues LoRA fine-tuning of a small BERT encoder (built from a config) on a synthetic
sentence-pair similarity task, with a separate regression head outside the PEFT model. The LoRA adapter
saved by an earlier run is loaded with PeftModel.from_pretrained, whose is_trainable argument defaults
to False: the adapter is loaded in inference mode with every LoRA weight frozen. The optimizer is
built from the parameters that require grad, which are now only the head's, so the "continued" LoRA
training never updates the adapter. Loss still goes down through the head, and nothing errors or warns.

Source: https://github.com/mosaicml/llm-foundry/pull/1701
"""

import tempfile

import torch
import torch.nn as nn
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import BertConfig, BertModel

torch.manual_seed(0)
V = 60
cfg = BertConfig(
    vocab_size=V,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=32,
)


def base():
    torch.manual_seed(1)
    return BertModel(cfg)


# pairs of token sequences; target = fraction of shared tokens
a = torch.randint(1, V, (512, 8))
b = torch.where(torch.rand(512, 8) < torch.rand(512, 1), a, torch.randint(1, V, (512, 8)))
target = (a == b).float().mean(1)

with tempfile.TemporaryDirectory() as d:
    first = get_peft_model(base(), LoraConfig(r=8, lora_alpha=16, target_modules=["query", "value"]))
    first.save_pretrained(d)  # adapter from the previous run

    encoder = PeftModel.from_pretrained(base(), d)  # BUG-LINE
    head = nn.Linear(128, 1)
    params = [p for p in list(encoder.parameters()) + list(head.parameters()) if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-3)
    lora_b = [p for n, p in encoder.named_parameters() if "lora_B" in n][0]
    b0 = lora_b.detach().clone()
    encoder.train()
    for step in range(30):
        idx = torch.randint(0, 512, (32,))
        ha = encoder(input_ids=a[idx]).last_hidden_state[:, 0]
        hb = encoder(input_ids=b[idx]).last_hidden_state[:, 0]
        pred = head(torch.cat([ha * hb, (ha - hb).abs()], -1)).squeeze(-1)
        loss = nn.functional.mse_loss(pred, target[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} mse {loss.item():.4f}")
    print("trainable tensors:", len(params), "lora_B change:", (lora_b.detach() - b0).norm().item())
