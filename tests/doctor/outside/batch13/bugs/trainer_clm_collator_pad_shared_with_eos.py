"""Causal-LM fine-tuning with the HF Trainer and DataCollatorForLanguageModeling(mlm=False).

The tokenizer has no pad token, so the script reuses the end-of-sequence token as the pad
token (the pattern shown in many tutorials). DataCollatorForLanguageModeling builds the labels
by copying input_ids and replacing every position equal to pad_token_id with -100. Because pad
and eos share one id, every real end-of-sequence token is masked out of the loss as well. The
loss still falls (all other tokens are learned), but the model never receives a training signal
for emitting eos, so at generation time it never stops.

Source: https://github.com/huggingface/transformers/issues/22794
"""

import tempfile

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    DataCollatorForLanguageModeling,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)

torch.manual_seed(0)
torch.set_num_threads(2)

vocab = {"<unk>": 0, "<eos>": 1}
for i in range(10):
    vocab[f"t{i}"] = len(vocab)
core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", eos_token="<eos>")
tokenizer.pad_token = tokenizer.eos_token  # BUG-LINE

# ascending runs that always finish at t9, then eos: the eos position is fully predictable
g = torch.Generator().manual_seed(0)
texts = []
for _ in range(400):
    start = int(torch.randint(0, 8, (1,), generator=g))
    texts.append(" ".join(f"t{i}" for i in range(start, 10)) + " <eos>")
ds = Dataset.from_dict({"text": texts})
ds = ds.map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])

cfg = GPT2Config(
    n_layer=2,
    n_embd=48,
    n_head=2,
    vocab_size=len(vocab),
    n_positions=16,
    bos_token_id=1,
    eos_token_id=1,
    pad_token_id=tokenizer.pad_token_id,
)
model = GPT2LMHeadModel(cfg)

collator = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=False)
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=16,
    max_steps=50,
    learning_rate=3e-3,
    logging_steps=10,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
    seed=0,
)
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=collator)
trainer.train()

model.eval()
with torch.no_grad():
    ids = tokenizer("t5 t6 t7 t8 t9", return_tensors="pt")["input_ids"]
    probs = model(ids).logits[0, -1].softmax(-1)
print(f"P(eos | ... t9) after training: {probs[tokenizer.eos_token_id].item():.4f}")
