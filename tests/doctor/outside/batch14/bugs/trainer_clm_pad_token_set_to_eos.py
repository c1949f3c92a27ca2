"""Causal-LM fine-tuning with HF Trainer where the pad token is set to the EOS token.

A common recipe sets `tokenizer.pad_token = tokenizer.eos_token` and uses
`DataCollatorForLanguageModeling(mlm=False)`. That collator builds labels from input_ids and
replaces every position equal to pad_token_id by -100, so every genuine end-of-sequence token
in the data is also removed from the loss. The run looks healthy (loss falls), but the model is
never trained to produce EOS and generates until max_new_tokens.

Source: https://github.com/huggingface/open-r1/pull/494
"""

import random
import tempfile

import torch
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
random.seed(0)

words = ["red", "green", "blue", "cat", "dog", "runs", "sleeps", "fast", "slow", "the", "a", "big"]
vocab = {"<unk>": 0, "<eos>": 1}
for w in words:
    vocab[w] = len(vocab)
backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
backend.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="<eos>")
tokenizer.pad_token = tokenizer.eos_token  # BUG-LINE


def sentence():
    n = random.randint(2, 6)
    return " ".join(random.choice(words) for _ in range(n)) + " <eos>"


train = [{"input_ids": tokenizer(sentence())["input_ids"]} for _ in range(256)]
collator = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=False)

model = GPT2LMHeadModel(
    GPT2Config(
        vocab_size=len(vocab),
        n_positions=16,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=1,
    )
)

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=16,
    max_steps=12,
    learning_rate=3e-3,
    logging_steps=4,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
)
trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=collator)
trainer.train()

batch = collator(train[:32])
n_eos = (batch["input_ids"] == tokenizer.eos_token_id).sum().item()
n_eos_in_loss = (batch["labels"] == tokenizer.eos_token_id).sum().item()
print(f"EOS tokens in batch inputs: {n_eos}, EOS tokens kept as labels: {n_eos_in_loss}")
