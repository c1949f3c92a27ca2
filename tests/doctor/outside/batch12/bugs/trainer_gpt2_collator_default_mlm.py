"""Trains a tiny GPT-2 causal language model (built from a config) with the Hugging Face Trainer on
synthetic arithmetic-progression token sequences. The batches are built with
DataCollatorForLanguageModeling, whose `mlm` argument defaults to True. Because the word-level
tokenizer defines a [MASK] token, the collator happily applies BERT-style masking: 15% of the input
tokens are corrupted (mostly to [MASK]) and every other label is set to -100. The causal model then
shifts those labels again, so it only learns next-token prediction at a few positions, from corrupted
inputs. Nothing errors and the reported loss goes down; the collator simply produces masked-LM batches
for a causal-LM model from the first step.

Source: https://github.com/tloen/alpaca-lora/issues/412
"""

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
words = [f"n{i}" for i in range(24)]
vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[MASK]", "[EOS]"] + words)}
core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
core.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(
    tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", mask_token="[MASK]", eos_token="[EOS]"
)


def seq():
    a, d = int(torch.randint(0, 24, (1,))), int(torch.randint(1, 4, (1,)))
    return " ".join(words[(a + d * k) % 24] for k in range(12)) + " [EOS]"


class DS(torch.utils.data.Dataset):
    def __init__(self, n):
        self.items = [tok(seq())["input_ids"] for _ in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {"input_ids": self.items[i]}


train_ds = DS(512)
collator = DataCollatorForLanguageModeling(tokenizer=tok)  # BUG-LINE
cfg = GPT2Config(
    vocab_size=len(vocab),
    n_embd=64,
    n_layer=2,
    n_head=4,
    n_positions=16,
    bos_token_id=3,
    eos_token_id=3,
    pad_token_id=0,
)
model = GPT2LMHeadModel(cfg)

with tempfile.TemporaryDirectory() as out_dir:
    args = TrainingArguments(
        output_dir=out_dir,
        max_steps=20,
        per_device_train_batch_size=32,
        learning_rate=3e-3,
        logging_steps=10,
        report_to=[],
        save_strategy="no",
        seed=0,
        use_cpu=True,
        disable_tqdm=True,
    )
    Trainer(model=model, args=args, train_dataset=train_ds, data_collator=collator).train()

model.eval()
with torch.no_grad():
    ids = torch.tensor([tok(seq())["input_ids"] for _ in range(64)])
    loss = model(input_ids=ids, labels=ids).loss.item()
    print("clean next-token eval loss:", round(loss, 4))
