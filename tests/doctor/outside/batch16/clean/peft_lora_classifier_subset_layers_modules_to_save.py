"""LoRA on a tiny BERT classifier, adapters only in the top encoder layer, head fully trained.

Unusual but correct: LoraConfig(layers_to_transform=[1], layers_pattern="layer")
restricts the adapters to encoder layer 1 (layer 0 stays frozen with no
adapter), and modules_to_save=["classifier"] makes a trainable copy of the
freshly initialised classification head so that it is trained (and would be
saved) alongside the adapters. The pooler is frozen on purpose. The loop is a
plain PyTorch loop over the trainable parameters only.

Source: https://github.com/huggingface/peft/issues/427
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, SEQ = 40, 10


def batch(g, n=32):
    y = torch.randint(0, 2, (n,), generator=g)
    ids = 5 + 17 * y[:, None] + torch.randint(0, 18, (n, SEQ), generator=g)
    ids[:, 0] = 2
    return ids, y


def main():
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=SEQ,
        num_labels=2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    base = BertForSequenceClassification(config)
    lora = LoraConfig(
        r=4,
        lora_alpha=8,
        target_modules=["query", "value"],
        layers_to_transform=[1],
        layers_pattern="layer",
        modules_to_save=["classifier"],
        lora_dropout=0.0,
    )
    model = get_peft_model(base, lora)
    model.print_trainable_parameters()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=5e-3)
    g = torch.Generator().manual_seed(1)
    model.train()
    for step in range(60):
        ids, y = batch(g)
        loss = F.cross_entropy(model(input_ids=ids).logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 59:
            print(f"step {step:3d} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
