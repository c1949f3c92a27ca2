"""Tiny BERT classifier trained with Hugging Face Accelerate, gradient accumulation and clipping.

Unusual but correct: micro-batches of 4 are accumulated over 4 steps inside
`accelerator.accumulate(model)`; accelerate scales the loss, skips the optimizer/scheduler
step and the zero_grad until gradients are synced, and clipping is only applied when
`accelerator.sync_gradients` is True, i.e. on the accumulated gradient. The optimizer's
zero_grad is used (not model.zero_grad), as in the fix from the source thread.

Source: https://github.com/huggingface/accelerate/issues/2341
"""

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import BertConfig, BertForSequenceClassification, get_constant_schedule_with_warmup

torch.manual_seed(0)
torch.set_num_threads(2)


def data(n=96, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 50, (n, 10), generator=g)
    ids[:, 0] = 2
    y = (ids[:, 1] < 25).long()
    return TensorDataset(ids, y)


def main():
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=4)
    cfg = BertConfig(
        vocab_size=50,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=16,
        num_labels=2,
    )
    model = BertForSequenceClassification(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=4e-3)
    sched = get_constant_schedule_with_warmup(opt, num_warmup_steps=3)
    dl = DataLoader(data(), batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0))
    model, opt, dl, sched = accelerator.prepare(model, opt, dl, sched)
    updates = 0
    for epoch in range(2):
        model.train()
        for ids, y in dl:
            with accelerator.accumulate(model):
                loss = F.cross_entropy(model(input_ids=ids).logits, y)
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    updates += 1
                opt.step()
                sched.step()
                opt.zero_grad()
            if accelerator.sync_gradients and updates % 4 == 0:
                print(f"epoch {epoch} update {updates:3d}  loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
