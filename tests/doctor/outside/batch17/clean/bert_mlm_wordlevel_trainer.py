"""Masked-LM pretraining of a tiny bidirectional BERT with the Hugging Face Trainer.

Modelled on the report about MLM batches in which the collator masks no token at
all: here the batches are large enough that the random 15% masking always hits
some tokens, and the DataCollatorForLanguageModeling sets every unmasked position
to -100 so only masked tokens are scored. Unusual but intended: the encoder is
non-causal (every token sees the whole sentence, including tokens to its right),
labels equal the inputs apart from the -100 positions, and the masking is drawn
afresh for every batch. The tokenizer is a local word-level BertTokenizerFast built
from a vocab file written to a temporary folder.

Source: https://github.com/huggingface/transformers/issues/16711
"""

import os
import random
import tempfile

import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertTokenizerFast,
    DataCollatorForLanguageModeling,
    Trainer,
    TrainingArguments,
)

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)

SUBJ = ["cat", "dog", "bird", "fish", "horse"]
VERB = {"cat": "purrs", "dog": "barks", "bird": "sings", "fish": "swims", "horse": "runs"}
ADV = ["loudly", "quietly", "slowly", "quickly", "happily"]
PLACE = ["home", "park", "river", "field", "garden"]
words = SUBJ + list(VERB.values()) + ADV + PLACE + ["the", "at", "in"]

vocab_dir = tempfile.mkdtemp()
with open(os.path.join(vocab_dir, "vocab.txt"), "w") as f:
    f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
tok = BertTokenizerFast(os.path.join(vocab_dir, "vocab.txt"), do_lower_case=True)


def sentence():
    s = random.choice(SUBJ)
    return f"the {s} {VERB[s]} {random.choice(ADV)} at the {random.choice(PLACE)}"


texts = [sentence() for _ in range(800)]
encoded = [tok(t, return_special_tokens_mask=True) for t in texts]
train_ds = [{k: e[k] for k in ("input_ids", "attention_mask", "special_tokens_mask")} for e in encoded]

cfg = BertConfig(
    vocab_size=tok.vocab_size,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=32,
    pad_token_id=tok.pad_token_id,
)
model = BertForMaskedLM(cfg)
collator = DataCollatorForLanguageModeling(tokenizer=tok, mlm=True, mlm_probability=0.15)

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=32,
    learning_rate=2e-3,
    warmup_steps=10,
    max_steps=100,
    logging_steps=20,
    save_strategy="no",
    report_to=[],
    use_cpu=True,
    disable_tqdm=True,
    seed=0,
)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, data_collator=collator)
result = trainer.train()
print(f"final train loss {result.training_loss:.4f}")

model.eval()
probe = tok("the dog [MASK] loudly at the park", return_tensors="pt")
with torch.no_grad():
    logits = model(**probe).logits
pos = (probe["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0]
print("prediction for masked verb:", tok.convert_ids_to_tokens([logits[0, pos].argmax().item()]))
