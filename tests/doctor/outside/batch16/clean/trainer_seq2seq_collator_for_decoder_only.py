"""Instruction-style fine-tuning of a decoder-only GPT-2 with DataCollatorForSeq2Seq.

Unusual but correct: the Seq2Seq collator is used with a causal LM. Each
example carries its own labels in which the prompt tokens are already set to
-100 so that only the response is learned; DataCollatorForSeq2Seq pads
input_ids with the pad token and pads labels with label_pad_token_id=-100,
which DataCollatorForLanguageModeling would not do (it rebuilds labels from
input_ids). The tokenizer has a dedicated pad token distinct from eos, so the
eos at the end of each response stays in the loss. No model is passed to the
collator, so no decoder_input_ids are created; GPT-2 shifts labels itself.

Source: https://github.com/LAION-AI/Open-Assistant/issues/2387
"""

import random
import tempfile

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    DataCollatorForSeq2Seq,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)


def build_tokenizer():
    vocab = {"[PAD]": 0, "[UNK]": 1, "<eos>": 2, "Q:": 3, "A:": 4}
    for i in range(30):
        vocab["w%d" % i] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", eos_token="<eos>")


def make_example(tok):
    n = random.randrange(2, 6)
    words = [random.randrange(0, 30) for _ in range(n)]
    prompt = "Q: " + " ".join("w%d" % w for w in words) + " A:"
    answer = "w%d w%d <eos>" % (words[0], words[0])
    p_ids = tok(prompt)["input_ids"]
    a_ids = tok(answer)["input_ids"]
    return {
        "input_ids": p_ids + a_ids,
        "attention_mask": [1] * (len(p_ids) + len(a_ids)),
        "labels": [-100] * len(p_ids) + a_ids,
    }


def main():
    tok = build_tokenizer()
    train = [make_example(tok) for _ in range(400)]
    config = GPT2Config(
        vocab_size=len(tok),
        n_positions=16,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = GPT2LMHeadModel(config)
    collator = DataCollatorForSeq2Seq(tokenizer=tok, padding=True, label_pad_token_id=-100)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        learning_rate=3e-3,
        lr_scheduler_type="constant",
        max_steps=40,
        logging_steps=10,
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
