"""HF Trainer on a tiny T5 with label smoothing, gradient accumulation and
DataCollatorForSeq2Seq given the model.

Unusual on purpose: label_smoothing_factor=0.1 makes the Trainer pop `labels` and compute the
smoothed loss itself, so the model never sees labels and cannot build decoder_input_ids; the
collator is therefore constructed with model=model so it creates decoder_input_ids from the
-100-padded labels. Targets have variable length, gradient_accumulation_steps=2, and the
reported loss includes the smoothing term (it cannot reach zero).

Source: https://github.com/huggingface/transformers/issues/10791
"""

import tempfile

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    DataCollatorForSeq2Seq,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
    Trainer,
    TrainingArguments,
)

torch.manual_seed(0)
torch.set_num_threads(2)

words = [f"t{i}" for i in range(30)]
vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
for w in words:
    vocab[w] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")

g = torch.Generator().manual_seed(0)
data = []
for _ in range(96):
    n = int(torch.randint(2, 7, (1,), generator=g))
    src = [words[int(i)] for i in torch.randint(0, 30, (n,), generator=g)]
    enc = tok(" ".join(src) + " </s>")
    enc["labels"] = tok(" ".join(reversed(src)) + " </s>")["input_ids"]
    data.append(dict(enc))

model = T5ForConditionalGeneration(
    T5Config(
        vocab_size=len(vocab),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        dropout_rate=0.0,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
)
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=8,
    gradient_accumulation_steps=2,
    max_steps=14,
    learning_rate=8e-3,
    label_smoothing_factor=0.1,
    logging_steps=4,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
)
collator = DataCollatorForSeq2Seq(tok, model=model, label_pad_token_id=-100)
trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=collator)
trainer.train()
batch = collator(data[:4])
print(
    "decoder_input_ids built by collator:",
    "decoder_input_ids" in batch,
    "| -100 in labels:",
    bool((batch["labels"] == -100).any()),
)
