"""Causal-LM fine-tuning with pad_token = eos_token and DataCollatorForLanguageModeling.

The collator builds labels from input_ids and sets every position equal to
pad_token_id to -100.  Because the pad token is the EOS token, the genuine
end-of-sequence tokens are masked out too, so the model never receives a loss
for emitting EOS and never learns to stop generating.
Source: https://github.com/huggingface/blog/issues/1302
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
words = ["<eos>", "<unk>"] + [f"w{i}" for i in range(30)]
core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
core.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<eos>", unk_token="<unk>")
tok.pad_token = tok.eos_token  # BUG-LINE

texts = [" ".join(f"w{(i + j) % 30}" for j in range(3 + i % 5)) + " <eos>" for i in range(24)]
ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
collator = DataCollatorForLanguageModeling(tok, mlm=False)
batch = collator([ds[i] for i in range(4)])
eos_targets = ((batch["input_ids"] == tok.eos_token_id) & (batch["attention_mask"] == 1)).sum().item()
eos_trained = (batch["labels"] == tok.eos_token_id).sum().item()

cfg = dict(n_layer=2, n_embd=32, n_head=2, n_positions=32, bos_token_id=0, eos_token_id=0, pad_token_id=0)
config = GPT2Config(vocab_size=len(words), **cfg)
model = GPT2LMHeadModel(config)
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(
        output_dir=out,
        max_steps=6,
        per_device_train_batch_size=4,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=3,
        learning_rate=1e-3,
        disable_tqdm=True,
    )
    Trainer(model=model, args=args, train_dataset=ds, data_collator=collator).train()
print(f"real EOS tokens in batch {eos_targets}, EOS positions with a loss {eos_trained}")
