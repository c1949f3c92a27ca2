"""LISA-style layer switching with the HF Trainer: switched-on layers never get optimised.

Source: https://github.com/OptimalScale/LMFlow/issues/726

A callback freezes every transformer block when it is constructed and, every
few steps, re-enables ``requires_grad`` on a random subset of blocks.  The
Trainer builds its optimizer once, at the start of ``train()``, from the
parameters that require grad *at that moment* -- only the embeddings, final
norm and head.  Blocks switched on later receive gradients but are not in any
optimizer param group, so they are never updated.  The loss still decreases
(the embeddings/head adapt) and the run looks normal for any setting of the
number of active layers.
"""

import random
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)


class CountingLM(Dataset):
    def __init__(self, n, seq=24, vocab=64):
        g = torch.Generator().manual_seed(0)
        start = torch.randint(0, vocab, (n, 1), generator=g)
        stride = torch.randint(1, 4, (n, 1), generator=g)
        self.data = (start + stride * torch.arange(seq)) % vocab

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


class LayerSwitchCallback(TrainerCallback):
    def __init__(self, model, n_active=2, interval=5):
        self.layers = model.transformer.h
        self.n_active = n_active
        self.interval = interval
        self.freeze_all_layers()  # BUG-LINE

    def freeze_all_layers(self):
        for layer in self.layers:
            for p in layer.parameters():
                p.requires_grad = False

    def switch_active_layers(self):
        self.freeze_all_layers()
        for idx in random.sample(range(len(self.layers)), self.n_active):
            for p in self.layers[idx].parameters():
                p.requires_grad = True

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step % self.interval == 0:
            self.switch_active_layers()


def main():
    cfg = GPT2Config(
        vocab_size=64,
        n_positions=32,
        n_embd=64,
        n_layer=4,
        n_head=4,
        bos_token_id=0,
        eos_token_id=0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = GPT2LMHeadModel(cfg)
    switcher = LayerSwitchCallback(model, n_active=2, interval=5)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=8,
        max_steps=30,
        learning_rate=3e-3,
        logging_steps=10,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        lr_scheduler_type="constant",
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=CountingLM(640), callbacks=[switcher])
    trainer.train()


if __name__ == "__main__":
    main()
