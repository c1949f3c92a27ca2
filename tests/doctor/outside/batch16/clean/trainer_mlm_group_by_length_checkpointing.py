"""Masked-LM pre-training of a tiny BERT with the HF Trainer: MLM collator,
group_by_length, gradient checkpointing and bf16 autocast on CPU.

Unusual but correct: DataCollatorForLanguageModeling(mlm=True) builds the
masked inputs and the labels (-100 everywhere except the masked positions)
on the fly, so the dataset carries no labels column; variable-length
examples are bucketed with train_sampling_strategy="group_by_length" (the
former group_by_length=True; lengths come from input_ids); gradient_checkpointing=True recomputes activations in backward;
bf16=True on CPU runs the forward in bfloat16 autocast while the weights and
optimizer state stay float32.

Source: https://github.com/huggingface/transformers/pull/48463
"""

import random
import tempfile

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    BertConfig,
    BertForMaskedLM,
    DataCollatorForLanguageModeling,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)


def build_tokenizer():
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
    for i in range(30):
        vocab["w%d" % i] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def main():
    tok = build_tokenizer()
    texts = []
    for _ in range(480):
        start, n = random.randrange(0, 12), random.randrange(4, 14)
        texts.append(" ".join("w%d" % ((start + 2 * k) % 30) for k in range(n)))
    train = [{"input_ids": [tok.cls_token_id] + tok(t)["input_ids"] + [tok.sep_token_id]} for t in texts]
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=20,
        pad_token_id=tok.pad_token_id,
    )
    model = BertForMaskedLM(config)
    collator = DataCollatorForLanguageModeling(tokenizer=tok, mlm=True, mlm_probability=0.15)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        learning_rate=3e-3,
        lr_scheduler_type="constant",
        max_steps=40,
        logging_steps=10,
        train_sampling_strategy="group_by_length",
        gradient_checkpointing=True,
        bf16=True,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=collator)
    result = trainer.train()
    print("final train loss", result.training_loss)


if __name__ == "__main__":
    main()
