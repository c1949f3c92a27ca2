"""HF Trainer with DataCollatorForLanguageModeling silently discards the -100 prompt masks in the dataset.

The dataset sets labels=-100 on the instruction tokens so only the response is trained, but the
causal-LM collator rebuilds labels from input_ids, overwriting the mask. The Trainer computes
the loss on the prompt as well, from the first step.
Source: https://github.com/huggingface/transformers/issues/26357
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

words = ["<pad>", "<eos>", "<unk>"] + [f"w{i}" for i in range(30)]
tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")

rows = []
for i in range(48):
    ids = [3 + (i + j) % 30 for j in range(10)] + [1]
    labels = [-100] * 6 + ids[6:]
    rows.append({"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels})
ds = Dataset.from_list(rows)

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=len(words), n_positions=32))
collator = DataCollatorForLanguageModeling(tokenizer=tok, mlm=False)  # BUG-LINE
with tempfile.TemporaryDirectory() as d:
    args = TrainingArguments(
        output_dir=d,
        max_steps=6,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
    )
    trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=collator)
    result = trainer.train()
print(f"train loss {result.training_loss:.4f}")
