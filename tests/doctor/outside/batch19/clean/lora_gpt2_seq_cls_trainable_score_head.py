"""LoRA fine-tune of a tiny GPT2ForSequenceClassification with the new `score` head fully trained.

Unusual but correct: the backbone is frozen on purpose, LoRA adapters are injected into the
attention/MLP projections, and the randomly initialised classification head is listed in
modules_to_save so it is trained in full (task_type SEQ_CLS would add it too; it is spelled
out here). The trainable-parameter count is checked, and the optimizer only receives
parameters that require grad. Padding uses a dedicated pad id so the last real token is
pooled.

Source: https://github.com/huggingface/transformers/issues/26160
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, TaskType, get_peft_model
from transformers import GPT2Config, GPT2ForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, VOCAB, N_CLASSES = 0, 40, 3


def batch(g, n=16):
    rows, ys = [], []
    for _ in range(n):
        y = int(torch.randint(0, N_CLASSES, (1,), generator=g))
        L = int(torch.randint(6, 11, (1,), generator=g))
        ids = torch.randint(5, VOCAB, (L,), generator=g)
        ids[int(torch.randint(0, L, (1,), generator=g))] = 1 + y  # class marker tokens 1..3
        rows.append(ids)
        ys.append(y)
    T = max(len(r) for r in rows)
    x = torch.full((n, T), PAD)
    for i, r in enumerate(rows):
        x[i, : len(r)] = r
    return x, (x != PAD).long(), torch.tensor(ys)


def main():
    g = torch.Generator().manual_seed(0)
    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_positions=16,
        n_embd=48,
        n_layer=2,
        n_head=4,
        num_labels=N_CLASSES,
        pad_token_id=PAD,
        bos_token_id=PAD,
        eos_token_id=PAD,
    )
    base = GPT2ForSequenceClassification(cfg)
    lcfg = LoraConfig(
        task_type=TaskType.SEQ_CLS,
        r=8,
        lora_alpha=16,
        lora_dropout=0.0,
        target_modules=["c_attn", "c_fc"],
        fan_in_fan_out=True,
        modules_to_save=["score"],
    )
    model = get_peft_model(base, lcfg)
    model.print_trainable_parameters()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)
    model.train()
    for step in range(1, 41):
        x, m, y = batch(g)
        logits = model(input_ids=x, attention_mask=m).logits
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}  acc {(logits.argmax(-1) == y).float().mean():.2f}")


if __name__ == "__main__":
    main()
