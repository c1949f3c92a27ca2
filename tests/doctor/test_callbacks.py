"""The Hugging Face Trainer and Lightning callbacks run the same checks: the bug draws its finding, the
same run written right draws none."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402


def test_trainer_callback_finds_unshifted_labels_in_a_custom_compute_loss(tmp_path):
    transformers = pytest.importorskip("transformers")
    from expkit.doctor import DoctorTrainerCallback

    class Ids(torch.utils.data.Dataset):
        def __init__(self):
            self.data = torch.randint(0, 32, (16, 12), generator=torch.Generator().manual_seed(0))

        def __len__(self):
            return len(self.data)

        def __getitem__(self, i):
            return {"input_ids": self.data[i], "labels": self.data[i]}

    class Unshifted(transformers.Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            logits = model(**inputs).logits  # (B, T, V)
            return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))  # not shifted

    def run(trainer_cls):
        torch.manual_seed(0)
        config = transformers.GPT2Config(vocab_size=32, n_positions=12, n_embd=16, n_layer=1, n_head=2)
        args = transformers.TrainingArguments(
            output_dir=str(tmp_path),
            per_device_train_batch_size=4,
            max_steps=3,
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            disable_tqdm=True,
        )
        cb = DoctorTrainerCallback()
        trainer_cls(model=transformers.GPT2LMHeadModel(config), args=args, train_dataset=Ids(), callbacks=[cb]).train()
        assert cb.watch is None  # closed after the watched steps
        return [f.check for f in cb.findings]

    assert run(Unshifted) == ["labels_not_shifted"]
    assert run(transformers.Trainer) == []  # the model shifts labels=input_ids itself


def test_lightning_callback_finds_softmax_before_cross_entropy():
    L = pytest.importorskip("lightning")
    from expkit.doctor import DoctorLightningCallback

    class Classifier(L.LightningModule):
        def __init__(self, softmax: bool):
            super().__init__()
            self.net, self.softmax = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)), softmax

        def training_step(self, batch, _):
            x, y = batch
            out = self.net(x)
            return F.cross_entropy(out.softmax(dim=1) if self.softmax else out, y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    def run(softmax: bool):
        torch.manual_seed(0)
        data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
        cb = DoctorLightningCallback()
        trainer = L.Trainer(
            max_steps=3,
            accelerator="cpu",
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[cb],
        )
        trainer.fit(Classifier(softmax), torch.utils.data.DataLoader(data, batch_size=16))
        return [f.check for f in cb.findings]

    assert run(True) == ["softmax_before_cross_entropy"]
    assert run(False) == []
