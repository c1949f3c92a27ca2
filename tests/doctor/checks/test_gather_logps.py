"""labels_not_shifted on a hand-written sequence log-likelihood (DPO's ``get_batch_logps``, a reward model's): the
log-probabilities gathered at the input tokens themselves, position for position, against the same gather done on
the next token (the outside development program batch18/bugs/dpo_batch_logps_unshifted_targets.py, from
https://github.com/eric-mitchell/direct-preference-optimization/issues/61)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _sequence_logps(model, ids, shifted: bool):
    logits = model(input_ids=ids).logits
    if shifted:
        logits, targets = logits[:, :-1], ids[:, 1:]
    else:
        targets = ids
    return torch.gather(F.log_softmax(logits, -1), 2, targets.unsqueeze(-1)).squeeze(-1).sum(-1)  # THE GATHER


def _train(shifted: bool):
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=40, n_positions=16, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            chosen, rejected = torch.randint(1, 40, (8, 12)), torch.randint(1, 40, (8, 12))
            logps = _sequence_logps(model, torch.cat([chosen, rejected]), shifted)
            loss = -F.logsigmoid(0.1 * (logps[:8] - logps[8:])).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "labels_not_shifted"]


def test_log_probabilities_gathered_at_the_input_tokens_are_found_at_the_gather():
    (f,) = _train(shifted=False)
    assert f.line == line_of("# THE GATHER", _sequence_logps) and f.evidence["positions_equal_to_input"] == 1.0


def test_log_probabilities_gathered_at_the_next_tokens_are_clean():
    assert _train(shifted=True) == []
