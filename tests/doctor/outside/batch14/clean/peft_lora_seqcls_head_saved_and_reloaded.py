"""LoRA fine-tuning of a tiny BERT classifier with the head trained via modules_to_save, then
saved and reloaded for further training.

Unusual but correct: `task_type="SEQ_CLS"` makes PEFT wrap the randomly initialised classifier in
a ModulesToSaveWrapper, so it is trained and written to the adapter file together with the LoRA
weights. After saving, the adapter is reloaded onto a fresh base with
`PeftModel.from_pretrained(..., is_trainable=True)`; the reloaded logits match the trained model
exactly and training continues from there.

Source: https://github.com/huggingface/peft/issues/2422
"""

import tempfile

import torch
import torch.nn.functional as F
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.set_num_threads(2)
VOCAB, SEQ = 40, 10


def base_model():
    torch.manual_seed(0)
    return BertForSequenceClassification(
        BertConfig(
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
    )


def batch(bs=32):
    x = torch.randint(3, VOCAB, (bs, SEQ))
    return x, (x[:, 0] < 20).long()


def train(model, steps, tag):
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model.train()
    for step in range(steps):
        x, y = batch()
        loss = F.cross_entropy(model(input_ids=x).logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == steps - 1:
            print(f"{tag} step {step:2d} loss {loss.item():.4f}")


torch.manual_seed(1)
config = LoraConfig(r=8, lora_alpha=16, target_modules=["query", "value", "dense"], task_type="SEQ_CLS")
model = get_peft_model(base_model(), config)
model.print_trainable_parameters()
train(model, 40, "train")

path = tempfile.mkdtemp()
model.save_pretrained(path)
probe, _ = batch(8)
model.eval()
with torch.no_grad():
    ref = model(input_ids=probe).logits

reloaded = PeftModel.from_pretrained(base_model(), path, is_trainable=True)
reloaded.eval()
with torch.no_grad():
    diff = (reloaded(input_ids=probe).logits - ref).abs().max().item()
print(f"max logit difference after reload: {diff:.2e}")
train(reloaded, 15, "continue")
