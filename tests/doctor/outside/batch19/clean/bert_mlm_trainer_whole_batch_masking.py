"""Bidirectional (BERT) encoder pre-trained from scratch with a masked-LM objective via HF Trainer.

Unusual but correct: the model sees the whole sequence in both directions, so the targets
are only the randomly masked positions (DataCollatorForLanguageModeling with mlm=True puts
-100 everywhere else and replaces inputs with [MASK]/random/kept tokens). The tokenizer is a
tiny WordLevel tokenizer built locally; the dataset keeps only model inputs so Trainer's
column removal has nothing to drop.

Source: https://github.com/huggingface/course/pull/22
"""

import tempfile

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import (
    BertConfig,
    BertForMaskedLM,
    DataCollatorForLanguageModeling,
    PreTrainedTokenizerFast,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

torch.manual_seed(0)
torch.set_num_threads(2)

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [f"t{i}" for i in range(30)]


def build_tokenizer():
    vocab = {tok: i for i, tok in enumerate(SPECIAL + WORDS)}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


class TextDataset(torch.utils.data.Dataset):
    def __init__(self, tok, n=256, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.rows = []
        for _ in range(n):
            a = int(torch.randint(0, 30, (1,), generator=g))
            s = int(torch.randint(1, 3, (1,), generator=g))
            line = " ".join(WORDS[(a + k * s) % 30] for k in range(10))
            self.rows.append({"input_ids": tok(line)["input_ids"]})

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


class Log(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            print(f"step {state.global_step:3d}  mlm loss {logs['loss']:.4f}")


def main():
    tok = build_tokenizer()
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=32,
        pad_token_id=tok.pad_token_id,
    )
    model = BertForMaskedLM(cfg)
    collator = DataCollatorForLanguageModeling(tokenizer=tok, mlm=True, mlm_probability=0.2)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        max_steps=40,
        learning_rate=5e-3,
        warmup_steps=4,
        logging_steps=10,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    Trainer(model=model, args=args, train_dataset=TextDataset(tok), data_collator=collator, callbacks=[Log()]).train()


if __name__ == "__main__":
    main()
