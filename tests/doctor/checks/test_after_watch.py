"""After the watched steps (issue 32): a validation that runs later (an epoch's end) and leaves the model in eval()
is found at the eval() line at the first step it trains in eval mode; a validation followed by train(), a frozen
teacher kept in eval() and a model without dropout or batch norm are silent. The class is the outside development
program batch7/bugs/eval_mode_not_restored_after_validation.py (from https://github.com/shubhamagarwal92/mmd/issues/14)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor.after_watch import PHASE_CHECKS  # noqa: E402
from expkit.doctor.probe import Probe  # noqa: E402


@contextmanager
def _watched(events: list[dict]) -> Iterator[Probe]:
    """A probe that watches two steps and stays after them, as ``expkit doctor`` runs one; at the end it is taken
    down as at a program's end: the watch finished, the after-watch hooks removed, a second watch finished."""
    probe = Probe(watch_steps=2, sink=events.append, after_watch=True)
    probe.install()
    try:
        yield probe
    finally:
        probe.finish()
        if probe.after is not None:
            probe.after.uninstall()
            if probe.after.second is not None:
                probe.after.second.finish()


def _run(train_back: bool, *, teacher: bool = False, dropout: float = 0.3) -> tuple[list[dict], int]:
    """Six epochs of four steps, a validation after each: returns the findings and the eval() line."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3))
    frozen = nn.Sequential(nn.Linear(8, 3), nn.Dropout(0.3))
    for p in frozen.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    events: list[dict] = []
    eval_line = 0
    with _watched(events):
        for _epoch in range(6):
            if train_back:
                model.train()
            for _ in range(4):
                x = torch.randn(16, 8)
                out = model(x) + (frozen(x) if teacher else 0)
                loss = F.cross_entropy(out, torch.randint(0, 3, (16,)))
                opt.zero_grad()
                loss.backward()
                opt.step()
            eval_line = inspect.currentframe().f_lineno + 1
            (frozen if teacher else model).eval()
            with torch.no_grad():
                model(torch.randn(4, 8))
    return [e for e in events if e["event"] == "finding"], eval_line


def test_a_later_validation_that_leaves_the_model_in_eval_is_found_at_the_eval_line():
    train = nn.Module.__dict__["train"]
    findings, eval_line = _run(train_back=False)
    (f,) = [f for f in findings if f["check"] == "train_in_eval_mode"]
    assert f["line"] == eval_line and f["file"] == __file__
    assert f["step"] == 5  # the first step of the second epoch, after the watch's two
    assert nn.Module.__dict__["train"] is train  # the hooks left once the finding was made


@pytest.mark.parametrize(
    ("train_back", "teacher", "dropout"),
    [(True, False, 0.3), (False, True, 0.3), (False, False, 0.0)],
    ids=["train-called-again", "frozen-teacher-in-eval", "no-mode-layers"],
)
def test_validation_put_right_a_frozen_teacher_and_a_model_without_mode_layers_are_silent(train_back, teacher, dropout):
    findings, _ = _run(train_back, teacher=teacher, dropout=dropout)
    assert not [f for f in findings if f["check"] == "train_in_eval_mode"]


def test_an_in_process_watch_keeps_no_hook_after_its_steps():
    events: list[dict] = []
    probe = Probe(watch_steps=1, sink=events.append)
    probe.install()
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    assert probe.finished and probe.after is None


def test_an_optimizer_built_after_the_watch_is_watched_again_from_its_first_step():
    # a fine-tuning phase: the pretrained model's head replaced after the new optimizer was built (the outside
    # development program batch11/bugs/finetune_head_replaced_after_optimizer.py): the new head is never stepped
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    events: list[dict] = []
    with _watched(events):
        pre = torch.optim.Adam(model.parameters(), lr=1e-3)
        for _ in range(5):
            loss = F.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 4, (16,)))
            pre.zero_grad()
            loss.backward()
            pre.step()
        assert not [e for e in events if e["event"] == "finding"]
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        head_line = inspect.currentframe().f_lineno + 1
        model[2] = nn.Linear(16, 3)
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    found = {f["check"]: f for f in events if f["event"] == "finding"}
    assert {"param_not_in_optimizer", "trainable_not_updated"} <= set(found) <= set(PHASE_CHECKS), list(found)
    assert found["trainable_not_updated"]["line"] == head_line  # the line that put the new head in the model
    assert found["trainable_not_updated"]["step"] == 6  # counted from the program's first step
    assert torch.optim.Optimizer.__dict__["__init__"].__module__ == "torch.optim.optimizer"  # every hook left


def _epochs(build: str, *, epochs: int = 4, steps: int = 3) -> tuple[list[dict], int]:
    """A loop of ``epochs`` x ``steps`` under a probe that stays after its two watched steps; ``build`` says where
    the optimizer is made: "epoch" (inside the epoch loop), "step" (inside the step loop), "phase" (once, and a
    second time at another line), "fold" (a new model per epoch), "sgd" (plain SGD per epoch: no state)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    events: list[dict] = []
    line = 0
    opt = torch.optim.Adam(model.parameters(), lr=1e-3) if build in ("phase", "step") else None
    with _watched(events):
        for epoch in range(epochs):
            if build == "fold":
                model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
            if build == "phase" and epoch == 2:
                opt = torch.optim.Adam(model.parameters(), lr=1e-4)
            if build in ("epoch", "fold", "sgd"):
                line = inspect.currentframe().f_lineno + 1
                opt = (torch.optim.SGD if build == "sgd" else torch.optim.Adam)(model.parameters(), lr=1e-3)
            for _ in range(steps):
                if build == "step":
                    line = inspect.currentframe().f_lineno + 1
                    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
                loss = F.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
                opt.zero_grad()
                loss.backward()
                opt.step()
    return [e for e in events if e["event"] == "finding"], line


@pytest.mark.parametrize(("build", "step"), [("epoch", 4), ("step", 2)], ids=["each-epoch", "each-step"])
def test_an_adam_rebuilt_in_the_loop_is_found_at_its_line(build, step):
    # the outside development program batch13/bugs/speaker_id_adam_recreated_each_epoch.py (from
    # https://github.com/alan-turing-institute/deepsensor/issues/47): each rebuild throws Adam's moments away. Per
    # epoch it shows after the watch (the first rebuild comes before step 4); per step inside it
    findings, line = _epochs(build)
    (f,) = [f for f in findings if f["check"] == "optimizer_rebuilt"]
    assert (f["file"], f["line"]) == (__file__, line)
    assert f["step"] == step
    assert f["evidence"]["params_with_state"] == 4
    assert torch.optim.Optimizer.__dict__["__init__"].__module__ == "torch.optim.optimizer"  # every hook left


@pytest.mark.parametrize("build", ["phase", "fold", "sgd"])
def test_a_new_phase_a_new_model_per_fold_and_a_stateless_sgd_are_not_rebuilds(build):
    findings, _ = _epochs(build)
    assert not [f for f in findings if f["check"] == "optimizer_rebuilt"]


@pytest.mark.parametrize("is_trainable", [False, True])
def test_an_adapter_resumed_frozen_for_a_second_phase_is_found_by_the_second_watch(is_trainable, tmp_path):
    # the outside development program batch14/bugs/peft_resume_adapter_loaded_in_inference_mode.py (from
    # https://github.com/huggingface/trl/pull/363): a LoRA adapter trained, saved, then loaded back with
    # PeftModel.from_pretrained (is_trainable=False by default) for a second phase around a new head
    peft = pytest.importorskip("peft")
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 8))
    events: list[dict] = []
    with _watched(events):
        model = peft.get_peft_model(net, peft.LoraConfig(r=2, target_modules=["0"]))
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
        for _ in range(3):
            loss = model(torch.randn(16, 8)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.save_pretrained(str(tmp_path))
        loaded_at = inspect.currentframe().f_lineno + 1
        model = peft.PeftModel.from_pretrained(nn.Sequential(nn.Linear(8, 8)), str(tmp_path), is_trainable=is_trainable)
        head = nn.Linear(8, 2)
        opt = torch.optim.SGD([p for p in [*model.parameters(), *head.parameters()] if p.requires_grad], lr=0.1)
        model.train()
        for _ in range(3):
            loss = F.cross_entropy(head(model(torch.randn(16, 8))), torch.randint(0, 2, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    found = [e for e in events if e["event"] == "finding" and e["check"] == "adapter_in_inference_mode"]
    assert len(found) == (0 if is_trainable else 1)
    # named where the adapter was loaded (a module built after the first watch, before the second optimizer)
    assert [(f["file"], f["line"]) for f in found] == ([] if is_trainable else [(__file__, loaded_at)])


@pytest.mark.parametrize("log_probabilities", [False, True])
def test_a_student_distilled_after_its_teacher_is_watched_for_what_its_loss_is_given(log_probabilities):
    # the outside development program batch15/bugs/kd_kldiv_given_probabilities.py (from
    # https://github.com/sebastian-hofstaetter/matchmaker/issues/18): the teacher trains first, the student's
    # nn.KLDivLoss is given its softmax in a second phase the first watch never sees
    torch.manual_seed(0)
    teacher, student = nn.Linear(8, 4), nn.Linear(8, 4)
    events: list[dict] = []
    with _watched(events):
        opt_t = torch.optim.SGD(teacher.parameters(), lr=0.1)
        for _ in range(4):
            loss = F.cross_entropy(teacher(torch.randn(16, 8)), torch.randint(0, 4, (16,)))
            opt_t.zero_grad()
            loss.backward()
            opt_t.step()
        kl = nn.KLDivLoss(reduction="batchmean")
        opt_s = torch.optim.SGD(student.parameters(), lr=0.1)
        for _ in range(3):
            x = torch.randn(16, 8)
            with torch.no_grad():
                target = F.softmax(teacher(x), -1)
            s = student(x)
            loss = kl(F.log_softmax(s, -1) if log_probabilities else F.softmax(s, -1), target)
            opt_s.zero_grad()
            loss.backward()
            opt_s.step()
    found = [e for e in events if e["event"] == "finding" and e["check"] == "kl_div_not_log_probabilities"]
    assert len(found) == (0 if log_probabilities else 1)
    assert all(e["step"] == 4 for e in found)  # counted from the program's start: before the student's first step


@pytest.mark.parametrize("shift_by_hand", [False, True])
def test_an_adapter_phase_on_labels_shifted_by_hand_is_found_by_the_second_watch(shift_by_hand):
    # the outside development program batch17/bugs/gpt2_lora_markov_corpus.py (from https://discuss.huggingface.co
    # /t/where-does-the-transformers-do-the-target-text-shifting-in-causal-lm/32408): the base trains first, then
    # a fine-tuning phase gives the causal LM labels it already shifted
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    lm = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=40, n_positions=32, n_embd=32, n_layer=1, n_head=2)
    )
    events: list[dict] = []
    with _watched(events):
        pre = torch.optim.AdamW(lm.parameters(), lr=1e-3)
        for _ in range(3):
            x = torch.randint(0, 40, (8, 12))
            loss = lm(input_ids=x, labels=x).loss
            pre.zero_grad()
            loss.backward()
            pre.step()
        opt = torch.optim.AdamW(lm.transformer.h.parameters(), lr=1e-3)
        for _ in range(3):
            batch = torch.randint(0, 40, (8, 13))
            inputs, labels = (batch[:, :-1], batch[:, 1:]) if shift_by_hand else (batch, batch)
            loss = lm(input_ids=inputs, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    found = [e for e in events if e["event"] == "finding" and e["check"] == "labels_shifted_twice"]
    assert len(found) == (1 if shift_by_hand else 0)


@pytest.mark.parametrize("backbone_eval", [False, True])
def test_a_linear_probe_that_puts_its_frozen_backbone_in_train_mode_is_found_by_the_second_watch(backbone_eval):
    # the outside development program batch18/bugs/linear_probe_clf_linear_frozen_resnet.py (from
    # https://github.com/kdexd/virtex/issues/16): pretraining first, then the backbone frozen and only a new head
    # trained, but model.train() each epoch lets the frozen batch norms' running statistics follow the probe data
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU())
    model = nn.Sequential(backbone, nn.Linear(16, 3))
    events: list[dict] = []
    train_line = 0
    with _watched(events):
        pre = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(4):
            loss = F.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
            pre.zero_grad()
            loss.backward()
            pre.step()
        backbone.requires_grad_(False)
        model[1] = nn.Linear(16, 3)
        opt = torch.optim.SGD(model[1].parameters(), lr=0.1)
        for _epoch in range(2):
            train_line = inspect.currentframe().f_lineno + 1
            model.train()
            if backbone_eval:
                backbone.eval()
            for _ in range(3):
                loss = F.cross_entropy(model(torch.randn(16, 8) * 3 + 1), torch.randint(0, 3, (16,)))
                opt.zero_grad()
                loss.backward()
                opt.step()
    found = [e for e in events if e["event"] == "finding" and e["check"] == "frozen_norm_updates_stats"]
    assert [e["line"] for e in found] == ([] if backbone_eval else [train_line])


@pytest.mark.parametrize(("strip_prefix", "positional"), [(False, False), (False, True), (True, False)])
def test_a_checkpoint_loaded_non_strict_after_the_watch_that_fills_nothing_is_found(strip_prefix, positional, tmp_path):
    # the outside development program batch19/bugs/gpt2_pretrain_wrapper_then_finetune_checkpoint.py (from
    # https://github.com/stefanopini/simple-HRNet/issues/79): a model pretrained inside a wrapper (keys 'net.*'),
    # saved, loaded into the bare model with strict=False after the watch: nothing matches, the fine-tune starts
    # from random weights
    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))

        def forward(self, x):
            return self.net(x)

    torch.manual_seed(0)
    events: list[dict] = []
    with _watched(events):
        wrapper = Wrapper()
        opt = torch.optim.SGD(wrapper.parameters(), lr=0.1)
        for _ in range(3):
            loss = F.cross_entropy(wrapper(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.save(wrapper.state_dict(), tmp_path / "pretrain.pt")
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        state = torch.load(tmp_path / "pretrain.pt")
        if strip_prefix:
            state = {k.removeprefix("net."): v for k, v in state.items()}
        loaded_at = inspect.currentframe().f_lineno + 1
        model.load_state_dict(state, False) if positional else model.load_state_dict(state, strict=False)
    found = [e for e in events if e["event"] == "finding" and e["check"] == "weights_not_loaded"]
    assert [(f["file"], f["line"]) for f in found] == ([] if strip_prefix else [(__file__, loaded_at)])
