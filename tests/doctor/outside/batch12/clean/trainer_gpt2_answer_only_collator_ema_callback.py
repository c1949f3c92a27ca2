"""Fine-tunes a tiny GPT-2 built from a config with the Hugging Face Trainer on a word-level "spell the sum"
task (prompt: `add three four =`, answer: `seven <eos>`). A hand-written collator tokenises prompt and answer,
right-pads with the end-of-sequence token (GPT-2 has no pad token, so pad and eos share an id) and builds labels
that are -100 on the prompt and on padding but keep the real end-of-sequence token of every answer; padding is
recognised through the attention mask, not through the token id, so the shared id is harmless. A TrainerCallback
keeps an exponential moving average of the weights after every optimizer step (on_step_end) and at the end the
raw and the averaged weights are both scored on held-out prompts. The loss is computed on the answer only, the
pad id equals the eos id and the averaged copy is never given to the optimizer, all on purpose.

Source: https://huggingface.co/docs/transformers/main_classes/callback
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

WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
]


def build_tokenizer():
    vocab = {"<eos>": 0, "<unk>": 1, "add": 2, "=": 3}
    for w in WORDS:
        vocab[w] = len(vocab)
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", eos_token="<eos>")
    tok.pad_token = tok.eos_token
    return tok


def make_pairs(n, seed):
    g = torch.Generator().manual_seed(seed)
    pairs = []
    for _ in range(n):
        a, b = torch.randint(0, 10, (2,), generator=g).tolist()
        pairs.append({"prompt": f"add {WORDS[a]} {WORDS[b]} =", "answer": WORDS[a + b]})
    return pairs


class AnswerOnlyCollator:
    def __init__(self, tok):
        self.tok = tok

    def __call__(self, rows):
        seqs, prompt_lens = [], []
        for r in rows:
            p = self.tok(r["prompt"], add_special_tokens=False)["input_ids"]
            a = self.tok(r["answer"], add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
            seqs.append(p + a)
            prompt_lens.append(len(p))
        longest = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), longest), self.tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s)
            mask[i, : len(s)] = 1
        labels = ids.clone()
        labels[mask == 0] = -100
        for i, n in enumerate(prompt_lens):
            labels[i, :n] = -100
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}


class WeightEMA(TrainerCallback):
    def __init__(self, decay):
        self.decay = decay
        self.shadow = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items() if v.is_floating_point()}

    def on_step_end(self, args, state, control, model=None, **kwargs):
        with torch.no_grad():
            for k, v in model.state_dict().items():
                if k in self.shadow:
                    self.shadow[k].mul_(self.decay).add_(v.detach(), alpha=1 - self.decay)


@torch.no_grad()
def answer_loss(model, collate, rows):
    model.eval()
    batch = collate(rows)
    return model(**batch).loss.item()


def main():
    tok = build_tokenizer()
    config = GPT2Config(
        vocab_size=len(tok),
        n_positions=16,
        n_embd=64,
        n_layer=2,
        n_head=4,
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = GPT2LMHeadModel(config)
    collate = AnswerOnlyCollator(tok)
    train, held_out = make_pairs(200, seed=1), make_pairs(40, seed=2)
    ema = WeightEMA(decay=0.7)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=16,
            max_steps=12,
            learning_rate=3e-3,
            warmup_steps=2,
            logging_steps=3,
            report_to=[],
            save_strategy="no",
            use_cpu=True,
            seed=0,
            remove_unused_columns=False,
            disable_tqdm=True,
        )
        trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=collate, callbacks=[ema])
        trainer.train()
    raw = answer_loss(model, collate, held_out)
    model.load_state_dict(ema.shadow, strict=False)
    print("held-out answer loss raw", round(raw, 4), "ema", round(answer_loss(model, collate, held_out), 4))


if __name__ == "__main__":
    main()
