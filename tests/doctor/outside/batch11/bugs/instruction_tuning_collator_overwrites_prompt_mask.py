"""Instruction tuning of a tiny GPT-2 with the HF Trainer. The dataset masks the prompt part of every example with
-100 in `labels` so that only the answer tokens are learned, but the batches are built with
DataCollatorForLanguageModeling(mlm=False), which ignores the provided `labels` and rebuilds them as a copy of
`input_ids` (masking only pad tokens). The prompt masking is thrown away for every batch, so the model is trained on
the prompt tokens too (here the prompt is 3/4 of each sequence). No warning is emitted and the loss decreases.

Source: https://github.com/oobabooga/textgen/issues/4031
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
words = ["[PAD]", "[EOS]", "question", "answer", ":"] + [f"w{i}" for i in range(40)]
tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[PAD]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", eos_token="[EOS]")

g = torch.Generator().manual_seed(0)
data = []
for _ in range(64):
    q = torch.randint(0, 40, (9,), generator=g).tolist()
    prompt = "question : " + " ".join(f"w{i}" for i in q) + " answer :"
    ans = " ".join(f"w{(i * 7) % 40}" for i in q[:3]) + " [EOS]"
    p_ids = tokenizer(prompt)["input_ids"]
    a_ids = tokenizer(ans)["input_ids"]
    data.append({"input_ids": p_ids + a_ids, "labels": [-100] * len(p_ids) + a_ids})

model = GPT2LMHeadModel(
    GPT2Config(
        vocab_size=len(words),
        n_positions=32,
        n_embd=64,
        n_layer=2,
        n_head=2,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
)
collator = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=False)  # BUG-LINE

with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(
        output_dir=out,
        max_steps=8,
        per_device_train_batch_size=8,
        learning_rate=5e-4,
        report_to=[],
        logging_steps=4,
        save_strategy="no",
        use_cpu=True,
        seed=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=collator)
    batch = collator(data[:2])
    print(
        "supervised label tokens in first example:",
        int((batch["labels"][0] != -100).sum()),
        "of which answer tokens:",
        sum(1 for x in data[0]["labels"] if x != -100),
    )
    trainer.train()
