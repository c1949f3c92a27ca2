"""labels_not_shifted through the HF Trainer's label smoothing (transformers#17960): with label_smoothing_factor
set, the Trainer scores the logits itself and shifts the labels only for the causal-LM classes it knows by name, so
a causal LM wrapped in a class of the program's own is trained to copy each token; found at the
label_smoothing_factor line. The same model unwrapped (the Trainer shifts) is silent."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from source_lines import line_of as _line_of  # noqa: E402

from expkit.doctor import watch  # noqa: E402

V = 32


def _train(tmp_path, *, wrapped: bool):
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
    from transformers.modeling_outputs import CausalLMOutput

    class Wrapper(torch.nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm, self.config = lm, lm.config

        def forward(self, input_ids, labels=None, **kwargs):
            return CausalLMOutput(logits=self.lm(input_ids=input_ids).logits)

    torch.manual_seed(0)
    ids = torch.randint(1, V, (24, 8))
    data = [{"input_ids": row, "labels": row.clone()} for row in ids]
    cfg = GPT2Config(vocab_size=V, n_positions=16, n_embd=16, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
    lm = GPT2LMHeadModel(cfg)
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=4,
        label_smoothing_factor=0.1,  # the smoothing
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    with watch(steps=2) as w:
        Trainer(model=Wrapper(lm) if wrapped else lm, args=args, train_dataset=data).train()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.kind == "bug"]


def test_a_wrapped_causal_lm_under_label_smoothing_copies_its_input_and_is_found(tmp_path):
    (f,) = _train(tmp_path, wrapped=True)
    assert f.check == "labels_not_shifted" and f.line == _line_of("# the smoothing", _train)


def test_a_causal_lm_class_the_trainer_knows_is_silent(tmp_path):
    assert _train(tmp_path, wrapped=False) == []
