"""GPT-2 style causal LM fine-tuned with HF Trainer; the collator builds next-token labels itself.

The collator in this program prepares `labels` the way a plain-PyTorch LM loop would: it
already shifts them left by one (labels[t] = input_ids[t+1]) and pads the tail with -100.
GPT2LMHeadModel's loss (ForCausalLMLoss) shifts labels a second time internally, so the
model is trained to predict token t+2 from position t. No error is raised, the loss still
falls a bit (the t+2 token is partly predictable), but the model never learns proper
next-token prediction. Same mechanism as the double shift reported for GitForCausalLM.

Source: https://github.com/huggingface/transformers/issues/47394
"""

import tempfile

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

torch.manual_seed(0)
torch.set_num_threads(2)

WORDS = [f"w{i}" for i in range(24)]


def build_tokenizer():
    vocab = {"<pad>": 0, "<eos>": 1}
    for w in WORDS:
        vocab[w] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


def make_corpus(n=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    lines = []
    for _ in range(n):
        start = int(torch.randint(0, len(WORDS), (1,), generator=g))
        step = int(torch.randint(1, 4, (1,), generator=g))
        length = int(torch.randint(8, 14, (1,), generator=g))
        lines.append(" ".join(WORDS[(start + k * step) % len(WORDS)] for k in range(length)))
    return lines


class LineDataset(torch.utils.data.Dataset):
    def __init__(self, lines, tokenizer):
        self.items = [tokenizer(l + " <eos>")["input_ids"] for l in lines]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {"input_ids": self.items[i]}


class NextTokenCollator:
    def __init__(self, pad_id):
        self.pad_id = pad_id

    def __call__(self, features):
        L = max(len(f["input_ids"]) for f in features)
        ids = torch.full((len(features), L), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(features), L), dtype=torch.long)
        for i, f in enumerate(features):
            n = len(f["input_ids"])
            ids[i, :n] = torch.tensor(f["input_ids"])
            mask[i, :n] = 1
        labels = ids.clone()
        labels[mask == 0] = -100
        labels = torch.cat([labels[:, 1:], torch.full((len(features), 1), -100)], dim=1)  # BUG-LINE
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}


class PrintLoss(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            print(f"step {state.global_step:4d}  loss {logs['loss']:.4f}")


def main():
    tok = build_tokenizer()
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_positions=32,
        n_embd=64,
        n_layer=2,
        n_head=4,
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = GPT2LMHeadModel(cfg)
    ds = LineDataset(make_corpus(), tok)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=16,
        max_steps=60,
        learning_rate=3e-3,
        logging_steps=10,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=ds,
        data_collator=NextTokenCollator(tok.pad_token_id),
        callbacks=[PrintLoss()],
    )
    trainer.train()


if __name__ == "__main__":
    main()
