"""Each check, in process through ``expkit.doctor.watch``: the buggy loop draws its finding at the buggy
line, the same loop written right draws none (so no test here can pass with a check that always or never fires)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402
from expkit.doctor.checks import all_checks  # noqa: E402
from expkit.doctor.findings import Finding  # noqa: E402
from expkit.doctor.runner import DoctorResult  # noqa: E402
from expkit.render.doctor import doctor_lines  # noqa: E402


def _data(n=256, d=8, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), torch.randint(0, classes, (n,), generator=g)


def _loop(*, zero_grad=True, zero_between=False, steps=3, lr=0.1, final=None, dropout=0.0):
    torch.manual_seed(0)
    X, y = _data()
    layers = [nn.Linear(8, 16), nn.ReLU()] + ([nn.Dropout(dropout)] if dropout else []) + [nn.Linear(16, 3)]
    model = nn.Sequential(*layers, *([final] if final is not None else []))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    with watch(model, opt, steps=2) as w:
        for i in range(steps):
            xb, yb = X[32 * i : 32 * (i + 1)], y[32 * i : 32 * (i + 1)]
            if zero_grad and not zero_between:
                opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            if zero_between:
                opt.zero_grad()
            opt.step()
    assert w.done and not w.check_errors
    return w


def checks_of(w):
    return {f.check for f in w.findings}


def test_missing_zero_grad_found_at_the_backward_line_and_absent_when_zeroed():
    w = _loop(zero_grad=False)
    (f,) = [f for f in w.findings if f.check == "missing_zero_grad"]
    assert f.file == __file__
    assert "loss.backward()" in inspect.getsource(_loop).splitlines()[f.line - _loop.__code__.co_firstlineno]
    # the stale share: the previous step's gradient is a large part of what the step saw
    assert 0.2 < f.evidence["stale_fraction_of_grad_norm"] <= 1.0
    assert f.step == 2
    assert checks_of(_loop()) == set()


def test_a_zero_grad_outside_the_step_loop_is_named_where_it_runs():
    # zero_grad once per epoch (pytorch/pytorch#47175): the epoch's steps add their gradients up
    from source_lines import line_of

    torch.manual_seed(0)
    X, y = _data()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with watch(model, opt, steps=2) as w:
        opt.zero_grad()  # once, before the epoch's steps
        for i in range(4):
            nn.functional.cross_entropy(model(X[16 * i : 16 * i + 16]), y[16 * i : 16 * i + 16]).backward()
            opt.step()
    (f,) = [f for f in w.findings if f.check == "missing_zero_grad"]
    here = test_a_zero_grad_outside_the_step_loop_is_named_where_it_runs
    assert f.line == line_of("# once, before the epoch's steps", here)


def _gan_zeroing(how: str):
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    opt_g, opt_d = torch.optim.Adam(G.parameters(), lr=1e-3), torch.optim.Adam(D.parameters(), lr=1e-3)
    bce = nn.functional.binary_cross_entropy_with_logits
    with watch(D, opt_d, steps=2) as w:
        for _ in range(3):
            real, fake = torch.randn(16, 2) + 2, G(torch.randn(16, 4))
            if how == "wrong_optimizer":
                opt_g.zero_grad()  # WRONG: the discriminator's zero_grad, called on the generator's optimizer
            elif how == "right":
                opt_d.zero_grad()
            d_real, d_fake = D(real), D(fake.detach())
            (bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))).backward()  # D-BACKWARD
            opt_d.step()
            opt_g.zero_grad()
            g_out = D(fake)
            bce(g_out, torch.ones_like(g_out)).backward()
            opt_g.step()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "missing_zero_grad"]


@pytest.mark.parametrize(("how", "marker"), [("wrong_optimizer", "# WRONG"), ("never", "# D-BACKWARD")])
def test_a_discriminator_never_zeroed_is_named_at_the_misdirected_zero_grad_or_its_backward(how, marker):
    from source_lines import line_of

    (f,) = _gan_zeroing(how)
    assert f.line == line_of(marker, _gan_zeroing)
    assert _gan_zeroing("right") == []


def test_zero_grad_between_backward_and_step():
    assert "zero_grad_before_step" in checks_of(_loop(zero_between=True))


def test_lr_zero_means_the_step_changes_nothing():
    w = _loop(lr=0.0)
    (f,) = [f for f in w.findings if f.check == "step_changes_nothing"]
    assert f.evidence["max_lr"] == 0.0 and f.evidence["max_abs_weight_change"] == 0.0


def test_softmax_before_cross_entropy():
    assert "softmax_before_cross_entropy" in checks_of(_loop(final=nn.Softmax(dim=1)))
    assert "softmax_before_cross_entropy" not in checks_of(_loop(final=nn.LogSoftmax(dim=1)))


def test_gradient_accumulation_is_not_a_missing_zero_grad():
    torch.manual_seed(0)
    X, y = _data()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for i in range(12):
            loss = nn.functional.cross_entropy(model(X[16 * i : 16 * i + 16]), y[16 * i : 16 * i + 16]) / 4
            loss.backward()
            if (i + 1) % 4 == 0:
                nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                opt.step()
                opt.zero_grad()
    assert w.findings == ()


def test_eval_without_no_grad_keeps_graph_and_with_no_grad_does_not():
    torch.manual_seed(0)
    X, y = _data()
    for guarded in (False, True):
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with watch(model, opt, steps=2) as w:
            for i in range(3):
                model.eval()
                with torch.set_grad_enabled(not guarded):
                    model(X[:8])
                model.train()
                opt.zero_grad()
                nn.functional.cross_entropy(model(X[32 * i : 32 * i + 32]), y[32 * i : 32 * i + 32]).backward()
                opt.step()
        assert ("eval_keeps_graph" in checks_of(w)) is not guarded


def test_training_left_in_eval_mode_needs_dropout_to_matter():
    torch.manual_seed(0)
    X, y = _data()
    for p in (0.0, 0.5):
        model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(p), nn.Linear(16, 3))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.eval()
        with watch(model, opt, steps=2) as w:
            for i in range(3):
                opt.zero_grad()
                nn.functional.cross_entropy(model(X[32 * i : 32 * i + 32]), y[32 * i : 32 * i + 32]).backward()
                opt.step()
        assert ("train_in_eval_mode" in checks_of(w)) is (p > 0)


def test_an_eval_model_with_a_layer_set_back_to_train_is_a_choice_not_a_slip():
    # FixRes-style fine-tuning: the model in eval() (running statistics fixed), one batch norm trained on purpose
    torch.manual_seed(0)
    X, y = _data()
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 16), nn.BatchNorm1d(16), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.eval()
    model[3].train()
    with watch(model, opt, steps=2) as w:
        for i in range(3):
            opt.zero_grad()
            nn.functional.cross_entropy(model(X[32 * i : 32 * i + 32]), y[32 * i : 32 * i + 32]).backward()
            opt.step()
    assert "train_in_eval_mode" not in checks_of(w)


def test_detached_module_gets_no_gradient():
    class Net(nn.Module):
        def __init__(self, cut):
            super().__init__()
            self.enc, self.head, self.cut = nn.Linear(8, 16), nn.Linear(16, 3), cut

        def forward(self, x):
            h = self.enc(x)
            return self.head(h.detach() if self.cut else h)  # the cut

    X, y = _data()
    for cut in (True, False):
        model = Net(cut)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with watch(model, opt, steps=1) as w:
            opt.zero_grad()
            nn.functional.cross_entropy(model(X[:32]), y[:32]).backward()
            opt.step()
        found = [f for f in w.findings if f.check == "no_gradient_reached"]
        assert bool(found) is cut
        if cut:
            assert found[0].evidence["params_without_grad"] == 2  # enc.weight and enc.bias
            lines, first = inspect.getsourcelines(Net.forward)
            assert found[0].line == first + next(i for i, t in enumerate(lines) if "# the cut" in t)


def test_a_detach_in_the_loop_is_named_where_it_cuts_the_encoder_off():
    # the outside development program batch15/bugs/quantized_autoencoder_latent_detached.py (from
    # https://github.com/Justin-Tan/generative-compression/issues/27): the quantised latent detached in the
    # training loop, not in a forward; the detach of something else (a logged value) is not the cut
    torch.manual_seed(0)
    encoder, decoder = nn.Linear(8, 4), nn.Linear(4, 8)
    opt = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-2)
    with watch(decoder, opt, steps=2) as w:
        for _ in range(3):
            x = torch.randn(16, 8)
            recon = decoder(torch.round(encoder(x) * 8).detach() / 8)  # the quantiser
            logged = recon.detach()
            loss = nn.functional.mse_loss(recon, x) + 0 * logged.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    (f,) = [f for f in w.findings if f.check == "no_gradient_reached"]
    line = inspect.getsourcelines(test_a_detach_in_the_loop_is_named_where_it_cuts_the_encoder_off)
    assert f.line == line[1] + next(i for i, t in enumerate(line[0]) if "# the quantiser" in t)


def test_every_check_module_registers_a_named_check():
    names = all_checks()
    assert {"missing_zero_grad", "first_loss", "modes", "same_batch", "item_sync"} <= set(names)
    assert all(cls.name == n for n, cls in names.items())


def test_hooks_are_removed_after_the_watch():
    original_backward = torch.Tensor.backward
    w = _loop()
    assert w.done
    assert torch.Tensor.backward is original_backward
    assert torch.nn.functional.cross_entropy.__name__ == "cross_entropy"


def test_item_sync_counts_calls_per_watched_step():
    # the probe sends only accelerator tensors to on_item; here the check's own rule is fed directly
    from expkit.doctor.probe import Probe, StepEvent

    events: list[dict] = []
    probe = Probe(watch_steps=2, sink=events.append)
    probe.active = True
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
    probe.lead = lambda: opt  # the leading optimizer
    for n_items in (2, 3):
        for _ in range(n_items):
            probe._dispatch("on_item", torch.zeros(()))
        probe._dispatch("on_step_post", StepEvent(opt, 1, []))
    probe._dispatch("finish")
    (f,) = [e for e in events if e.get("check") == "item_sync"]
    assert f["kind"] == "performance"
    assert (f["evidence"]["item_calls_per_step_min"], f["evidence"]["item_calls_per_step_max"]) == (2, 3)


def test_labels_equal_to_inputs_are_flagged_and_shifted_labels_are_not():
    torch.manual_seed(0)
    emb, head = nn.Embedding(20, 8), nn.Linear(8, 20)
    model = nn.Sequential(emb, head)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.randint(0, 20, (4, 9))
    for shifted in (False, True):
        with watch(model, opt, steps=1) as w:
            x, y = (ids[:, :-1], ids[:, 1:]) if shifted else (ids, ids)
            loss = nn.functional.cross_entropy(model(x).reshape(-1, 20), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert ("labels_not_shifted" in checks_of(w)) is not shifted


class _SoftmaxClf(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)  # the squash


@pytest.mark.parametrize("log_softmax", [False, True])
def test_ctc_loss_on_raw_logits_is_found_and_on_log_probabilities_is_not(log_softmax):
    torch.manual_seed(0)
    rnn, head = nn.GRU(8, 16), nn.Linear(16, 6)
    opt = torch.optim.Adam([*rnn.parameters(), *head.parameters()], lr=1e-2)
    targets, in_lens, tgt_lens = torch.randint(1, 6, (4, 5)), torch.full((4,), 20), torch.full((4,), 5)
    with watch(rnn, opt, steps=2) as w:
        for _ in range(2):
            out = head(rnn(torch.randn(20, 4, 8))[0])  # (time, batch, classes)
            scores = out.log_softmax(-1) if log_softmax else out
            loss = nn.functional.ctc_loss(scores, targets, in_lens, tgt_lens)  # THE CTC LINE
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors, w.check_errors
    found = [f for f in w.findings if f.check == "logits_into_nll_loss"]
    if log_softmax:
        assert found == []
        return
    (f,) = found
    lines, first = inspect.getsourcelines(test_ctc_loss_on_raw_logits_is_found_and_on_log_probabilities_is_not)
    assert f.line == first + next(i for i, text in enumerate(lines) if "# THE CTC LINE" in text)
    assert f.evidence["max_abs_logsumexp"] > 1e-3


def test_ctc_input_made_by_the_users_own_op_is_named_at_that_op():
    # the outside development program batch16/bugs/ctc_conv_encoder_speech.py (from
    # https://github.com/jeremyfix/deeplearning-lectures/issues/22): the logits transposed to (time, batch,
    # classes) and named log_probs, the log_softmax left out on that line
    torch.manual_seed(0)
    head = nn.Linear(8, 6)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    targets, in_lens, tgt_lens = torch.randint(1, 6, (4, 5)), torch.full((4,), 20), torch.full((4,), 5)
    with watch(head, opt, steps=2) as w:
        for _ in range(2):
            logits = head(torch.randn(4, 20, 8))
            log_probs = logits.transpose(0, 1)  # THE TRANSPOSE
            loss = nn.functional.ctc_loss(log_probs, targets, in_lens, tgt_lens)
            opt.zero_grad()
            loss.backward()
            opt.step()
    (f,) = [f for f in w.findings if f.check == "logits_into_nll_loss"]
    lines, first = inspect.getsourcelines(test_ctc_input_made_by_the_users_own_op_is_named_at_that_op)
    assert f.line == first + next(i for i, text in enumerate(lines) if "# THE TRANSPOSE" in text)


def test_probabilities_into_nll_loss_are_named_where_the_softmax_was_applied():
    # pattern of batch 7's dev program (a text classifier returning softmax into nn.NLLLoss)
    torch.manual_seed(0)
    X, y = _data()
    model = _SoftmaxClf()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for i in range(3):
            loss_line = inspect.currentframe().f_lineno + 1
            loss = nn.functional.nll_loss(model(X[32 * i : 32 * (i + 1)]), y[32 * i : 32 * (i + 1)])
            opt.zero_grad()
            loss.backward()
            opt.step()
    (f,) = [f for f in w.findings if f.check == "logits_into_nll_loss"]
    lines, first = inspect.getsourcelines(_SoftmaxClf)
    assert f.line == first + next(i for i, text in enumerate(lines) if "# the squash" in text)
    # the cause is in the model; where it showed (the loss call) is named beside it, in --json and in the report
    assert (f.seen_file, f.seen_line) == (__file__, loss_line)
    assert Finding.from_json(f.to_json()) == f
    result = DoctorResult(("python",), 0, 2, 2, armed=True, stopped=False, elapsed_s=0.0, findings=(f,))
    assert any(line.endswith(f"(seen at line {loss_line}) (step {f.step})") for line in doctor_lines(result))


class _Pooled(nn.Module):
    """Attention pooling over a GRU's outputs, batch-first or time-major: softmax(dim=0) is over the batch in the
    first layout (a bug) and over time in the second (correct)."""

    def __init__(self, time_major: bool):
        super().__init__()
        self.time_major = time_major
        self.gru, self.score, self.fc = nn.GRU(4, 8, batch_first=not time_major), nn.Linear(8, 1), nn.Linear(8, 3)

    def forward(self, x):
        h, _ = self.gru(x)
        w = torch.softmax(self.score(h).squeeze(-1), dim=0)
        return self.fc((w.unsqueeze(-1) * h).sum(0 if self.time_major else 1))


@pytest.mark.parametrize("time_major", [False, True])
def test_softmax_over_dim_0_is_over_the_batch_only_when_axis_0_is_the_batch(time_major):
    torch.manual_seed(0)
    model = _Pooled(time_major)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            x = torch.randn(7, 16, 4) if time_major else torch.randn(16, 7, 4)  # time 7, batch 16
            loss = nn.functional.cross_entropy(model(x), torch.randint(0, 3, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert ("softmax_over_batch" in checks_of(w)) is (not time_major)


def _policy(how: str):
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    with watch(policy, opt, steps=2) as w:
        for _ in range(2):
            obs = torch.randn(32, 6)
            logits = policy(obs)
            if how == "contrastive":  # a (B, B) similarity softmaxed over the batch on purpose (one direction)
                sim = logits @ logits.T
                loss = -sim.log_softmax(dim=0).diagonal().mean()
            else:
                logp = logits.log_softmax(0) if how == "batch_axis" else logits.log_softmax(-1)  # THE SOFTMAX
                actions = torch.randint(0, 3, (32,))
                loss = -(logp.gather(1, actions[:, None]).squeeze(1) * torch.randn(32)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "softmax_over_batch"]


def test_a_hand_written_policy_loss_over_a_softmax_across_the_batch_is_found_at_the_softmax():
    from source_lines import line_of

    (f,) = _policy("batch_axis")
    assert f.line == line_of("# THE SOFTMAX", _policy) and f.evidence == {"batch": 32, "shape": [32, 3]}
    assert _policy("class_axis") == [] and _policy("contrastive") == []
