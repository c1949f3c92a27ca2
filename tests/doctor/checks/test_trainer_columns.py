"""trainer_dropped_asked_column: a column the HF Trainer removed (remove_unused_columns) that the program's own
compute_loss asks for (transformers#25054), with the twins that keep the column or never ask for it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("datasets")
from source_lines import line_of as _line_of  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _weighted(tmp_path, *, keep_columns: bool, asks: bool):
    from datasets import Dataset
    from transformers import GPT2Config, GPT2ForSequenceClassification, Trainer, TrainingArguments

    class WeightedTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            weight = inputs.pop("weight", None) if asks else None  # the lookup
            labels = inputs.pop("labels")
            outputs = model(**inputs)
            per_example = torch.nn.functional.cross_entropy(outputs.logits, labels, reduction="none")
            w = weight if weight is not None else torch.ones_like(per_example)
            loss = (per_example * w).sum() / w.sum()
            return (loss, outputs) if return_outputs else loss

    torch.manual_seed(0)
    ids = torch.randint(1, 64, (16, 8))
    data = Dataset.from_dict(
        {"input_ids": ids.tolist(), "labels": (ids[:, 0] > 32).long().tolist(), "weight": [2.0, 1.0] * 8}
    )
    cfg = GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2, num_labels=2, pad_token_id=0)
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=4,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        remove_unused_columns=not keep_columns,  # the columns' fate
    )
    with watch(steps=2) as w:
        WeightedTrainer(model=GPT2ForSequenceClassification(cfg), args=args, train_dataset=data).train()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "trainer_dropped_asked_column"]


def test_a_dropped_column_that_compute_loss_asks_for_is_found_at_remove_unused_columns(tmp_path):
    (f,) = _weighted(tmp_path, keep_columns=False, asks=True)
    assert f.evidence["asked_and_dropped"] == ["weight"] and f.line == _line_of("# the columns' fate", _weighted)


@pytest.mark.parametrize(("keep_columns", "asks"), [(True, True), (False, False)])
def test_kept_columns_and_a_loss_that_asks_for_none_are_silent(tmp_path, keep_columns, asks):
    assert _weighted(tmp_path, keep_columns=keep_columns, asks=asks) == []


def _forward_side(tmp_path, column: str, extra_column: str | None = None, as_torch_dataset: bool = False):
    """A model whose forward takes an optional per-row weight (``sample_weight``) and a data set that names its
    weight column ``column``: the Trainer drops every column that is not a forward argument."""
    from datasets import Dataset
    from torch import nn
    from transformers import Trainer, TrainingArguments

    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))

        def forward(self, features, labels=None, sample_weight=None, token_type_ids=None):
            logits = self.net(features).squeeze(-1)
            per_row = nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="none")
            loss = (per_row * sample_weight).mean() if sample_weight is not None else per_row.mean()
            return {"loss": loss, "logits": logits}

    torch.manual_seed(0)
    x = torch.randn(32, 6)
    rows = {"features": x.tolist(), "labels": (x[:, 0] > 0).float().tolist()}
    if column == "weight":
        rows["weight"] = [3.0, 1.0] * 16  # the weight column
    elif column == "row_weights":
        rows["row_weights"] = [3.0, 1.0] * 16  # the weights column
    else:
        rows["sample_weight"] = [3.0, 1.0] * 16
    if extra_column:
        rows[extra_column] = [f"row {i}" for i in range(32)]
    data = Dataset.from_dict(rows)
    data.set_format("torch")
    if as_torch_dataset:  # a torch Dataset of dicts: the Trainer's collator drops the keys forward does not take
        data = [{k: v for k, v in data[i].items()} for i in range(len(data))]
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=8,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    with watch(steps=2) as w:
        Trainer(model=Scorer(), args=args, train_dataset=data).train()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "trainer_dropped_asked_column"]


@pytest.mark.parametrize(("column", "marker"), [("weight", "# the weight column"), ("row_weights", "# the weights")])
def test_a_column_meant_for_a_forward_argument_under_another_name_is_found_where_it_is_named(tmp_path, column, marker):
    (f,) = _forward_side(tmp_path, column)
    assert f.evidence["dropped_column"] == column and f.evidence["argument_never_given"] == "sample_weight"
    assert f.line == _line_of(marker, _forward_side)


def test_a_column_named_as_the_argument_and_a_dropped_text_column_are_silent(tmp_path):
    # "sample_weight" arrives; "text" is dropped, and forward's idle token_type_ids shares no word with it
    assert _forward_side(tmp_path, "sample_weight", extra_column="text") == []


def test_a_torch_dataset_whose_sample_key_is_meant_for_a_forward_argument_is_found_too(tmp_path):
    (f,) = _forward_side(tmp_path, "weight", as_torch_dataset=True)
    assert f.evidence["dropped_column"] == "weight" and f.line == _line_of("# the weight column", _forward_side)
    assert _forward_side(tmp_path, "sample_weight", as_torch_dataset=True) == []


def _kwargs_forward(tmp_path, reads: str):
    """A classifier that takes its padding mask through ``**kwargs`` (transformers#7548,
    https://github.com/huggingface/transformers/issues/7548): the Trainer keeps only the columns forward names."""
    from datasets import Dataset
    from torch import nn
    from transformers import Trainer, TrainingArguments

    class MeanPool(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.head = nn.Embedding(32, 8, padding_idx=0), nn.Linear(8, 2)

        def forward(self, input_ids, labels=None, **kwargs):  # the signature
            mask = kwargs.get("attention_mask")
            return self.pool(input_ids, labels, mask)

        def pool(self, input_ids, labels, mask):
            mask = torch.ones_like(input_ids) if mask is None else mask
            h = (self.emb(input_ids) * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
            logits = self.head(h)
            return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}

    class TypedPool(MeanPool):
        def forward(self, input_ids, labels=None, **kwargs):
            return self.pool(input_ids, labels, kwargs.get("token_type_ids"))

    torch.manual_seed(0)
    lengths = torch.randint(2, 8, (32,))
    mask = (torch.arange(8)[None] < lengths[:, None]).long()
    ids = torch.randint(1, 32, (32, 8)) * mask
    data = Dataset.from_dict({"input_ids": ids.tolist(), "attention_mask": mask.tolist(), "labels": [0, 1] * 16})
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=8,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    with watch(steps=2) as w:
        Trainer(model=MeanPool() if reads == "attention_mask" else TypedPool(), args=args, train_dataset=data).train()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "trainer_dropped_asked_column"]


def test_a_dropped_column_read_from_forwards_kwargs_is_found_at_the_signature(tmp_path):
    (f,) = _kwargs_forward(tmp_path, "attention_mask")
    assert f.evidence["read_from_kwargs"] == ["attention_mask"]
    assert f.line == _line_of("# the signature", _kwargs_forward)


def test_kwargs_that_read_no_dropped_column_are_silent(tmp_path):
    assert _kwargs_forward(tmp_path, "token_type_ids") == []
