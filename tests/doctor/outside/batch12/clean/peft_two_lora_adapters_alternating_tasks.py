"""Trains two LoRA adapters, each with its own classification head, on one frozen tiny BERT sequence classifier
with peft, alternating between two synthetic tasks (task "first": is the first token in the lower half of the
vocabulary; task "last": is the last token). The second adapter is added with `add_adapter`, and before each step
`set_adapter` activates the adapter of the current task, which also switches which copy of the classifier head
(created through `task_type=SEQ_CLS`) is used and marks only that adapter as trainable. Each adapter has its own
AdamW optimizer over its own parameters, so the optimizer of the inactive adapter simply is not stepped; the
program checks that a step on one task leaves the other adapter's weights bit-for-bit unchanged. Two optimizers
over disjoint parameter sets of one model, and an adapter whose parameters have requires_grad=False for half of
the run, are intended.

Source: https://huggingface.co/docs/peft/package_reference/peft_model
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, TaskType, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)

VOCAB, LEN = 30, 10


def make_task(name, n, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (n, LEN), generator=g)
    pos = 0 if name == "first" else LEN - 1
    return ids, (ids[:, pos] < VOCAB // 2).long()


def adapter_state(model, name):
    return {k: v.detach().clone() for k, v in model.named_parameters() if f".{name}." in k}


def main():
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=32,
        num_labels=2,
    )
    base = BertForSequenceClassification(config)
    lora = LoraConfig(
        task_type=TaskType.SEQ_CLS, r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["query", "value", "dense"]
    )
    model = get_peft_model(base, lora, adapter_name="first")
    model.add_adapter("last", lora)

    data = {name: make_task(name, 256, seed) for name, seed in (("first", 1), ("last", 2))}
    held = {name: make_task(name, 128, seed) for name, seed in (("first", 3), ("last", 4))}
    optims = {}
    for name in ("first", "last"):
        params = [p for k, p in model.named_parameters() if f".{name}." in k]
        optims[name] = torch.optim.AdamW(params, lr=1e-2)
        print(name, "adapter tensors", len(params))

    for step in range(12):
        name = "first" if step % 2 == 0 else "last"
        other = "last" if name == "first" else "first"
        model.set_adapter(name)
        model.train()
        ids, y = data[name]
        idx = torch.randint(0, len(ids), (32,), generator=torch.Generator().manual_seed(step))
        frozen_other = adapter_state(model, other)
        loss = F.cross_entropy(model(input_ids=ids[idx]).logits, y[idx])
        optims[name].zero_grad()
        loss.backward()
        optims[name].step()
        unchanged = all(torch.equal(v, frozen_other[k]) for k, v in model.named_parameters() if k in frozen_other)
        if step % 4 < 2:
            print("step", step, name, "loss", round(loss.item(), 4), "other adapter unchanged", unchanged)

    model.eval()
    with torch.no_grad():
        for name in ("first", "last"):
            model.set_adapter(name)
            ids, y = held[name]
            acc = (model(input_ids=ids).logits.argmax(-1) == y).float().mean().item()
            print("held-out accuracy", name, round(acc, 3))


if __name__ == "__main__":
    main()
