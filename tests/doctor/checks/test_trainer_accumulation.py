"""trainer_accumulation_not_scaled: an HF Trainer's compute_loss override that returns its own per-micro-batch mean
under gradient accumulation, while the model takes loss kwargs, so the Trainer leaves the normalisation to it (the
class of https://github.com/MakazhanAlpamys/Soup/issues/720; the Trainer's rule since transformers#34191): found
at the override's return. Silent: the override normalised by num_items_in_batch, and the same override without
accumulation."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from source_lines import line_of as _line_of  # noqa: E402

from expkit.doctor import watch  # noqa: E402

V = 32


def _train(tmp_path, *, accumulate: int, normalised: bool):
    import torch.nn.functional as F
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    class TokenLossTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            out = model(**inputs)
            per_token = F.cross_entropy(out.logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1), reduction="none")
            if normalised and num_items_in_batch is not None:
                loss = per_token.sum() / num_items_in_batch
            else:
                loss = per_token.mean()
            return (loss, out) if return_outputs else loss  # the override's return

    torch.manual_seed(0)
    ids = torch.randint(1, V, (24, 8))
    data = [{"input_ids": row, "labels": row.clone()} for row in ids]
    cfg = GPT2Config(vocab_size=V, n_positions=16, n_embd=16, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=accumulate,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    with watch(steps=2) as w:
        TokenLossTrainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=data).train()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.kind == "bug"]


def test_a_per_micro_batch_mean_under_accumulation_is_found_at_the_return(tmp_path):
    (f,) = _train(tmp_path, accumulate=3, normalised=False)
    assert f.check == "trainer_accumulation_not_scaled"
    assert f.line == _line_of("# the override's return", _train) and f.evidence["gradient_accumulation_steps"] == 3


@pytest.mark.parametrize(("accumulate", "normalised"), [(3, True), (1, False)])
def test_a_loss_normalised_by_the_count_or_no_accumulation_is_silent(tmp_path, accumulate, normalised):
    assert _train(tmp_path, accumulate=accumulate, normalised=normalised) == []
