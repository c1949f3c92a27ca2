"""Instruction-style SFT of a tiny GPT-2 with HF Trainer and a prompt-masking data collator.

Each example stores `input_ids` and `prompt_len`; the collator sets labels of the prompt
tokens to -100 so only the answer is trained. Trainer's remove_unused_columns drops every
dataset column that is not an argument of model.forward() before the collator sees the
features, so `prompt_len` never arrives. The collator's fallback (prompt_len = 0) then
silently computes the loss on the prompt tokens too: the run looks fine, but the model is
mostly trained to model the random prompts rather than the answers.

Source: https://github.com/huggingface/transformers/pull/38091
"""

import tempfile

import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, SEP, EOS, VOCAB = 0, 1, 2, 40

TRAIN_ARGS = dict(
    per_device_train_batch_size=16,
    max_steps=40,
    learning_rate=3e-3,
    logging_steps=10,
    remove_unused_columns=True,  # BUG-LINE
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
    seed=0,
)


def build_dataset(n=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    rows = {"input_ids": [], "prompt_len": []}
    for _ in range(n):
        prompt = torch.randint(3, VOCAB, (int(torch.randint(4, 9, (1,), generator=g)),), generator=g)
        answer = torch.sort(prompt).values  # answer = sorted prompt
        ids = prompt.tolist() + [SEP] + answer.tolist() + [EOS]
        rows["input_ids"].append(ids)
        rows["prompt_len"].append(len(prompt) + 1)
    return Dataset.from_dict(rows)


class PromptMaskCollator:
    def __call__(self, features):
        L = max(len(f["input_ids"]) for f in features)
        ids = torch.full((len(features), L), PAD, dtype=torch.long)
        attn = torch.zeros_like(ids)
        labels = torch.full_like(ids, -100)
        for i, f in enumerate(features):
            seq = torch.tensor(f["input_ids"])
            n = len(seq)
            ids[i, :n] = seq
            attn[i, :n] = 1
            start = f.get("prompt_len", 0)
            labels[i, start:n] = seq[start:]
        return {"input_ids": ids, "attention_mask": attn, "labels": labels}


class LogLoss(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            print(f"step {state.global_step:3d}  loss {logs['loss']:.4f}")


def main():
    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_positions=24,
        n_embd=48,
        n_layer=2,
        n_head=4,
        bos_token_id=EOS,
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    model = GPT2LMHeadModel(cfg)
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), **TRAIN_ARGS)
    trainer = Trainer(
        model=model, args=args, train_dataset=build_dataset(), data_collator=PromptMaskCollator(), callbacks=[LogLoss()]
    )
    trainer.train()


if __name__ == "__main__":
    main()
