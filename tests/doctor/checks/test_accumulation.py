"""accumulation_not_scaled: k DataLoader micro-batches backpropagating their mean loss undivided."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _accumulate(*, divide: bool, accum: int = 4):
    torch.manual_seed(0)
    X, y = torch.randn(256, 8), torch.randint(0, 3, (256,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for i, (xb, yb) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(xb), yb)
            (loss / accum if divide else loss).backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
            if w.done:
                break
    assert not w.check_errors
    return [f for f in w.findings if f.check == "accumulation_not_scaled"]


def test_undivided_accumulation_is_found_with_the_gradient_ratio():
    (f,) = _accumulate(divide=False)
    assert f.evidence["micro_batches"] == 4
    assert f.evidence["backward_value_over_loss_value"] == pytest.approx(1.0)
    # four micro-batches of one init: their gradients mostly agree, so the sum is 1-4x the first one's norm
    assert 1.0 < f.evidence["step_over_micro_batch_grad_norm"] <= 4.0


def test_a_torch_function_mode_of_the_program_does_not_double_the_events():
    """A program's own TorchFunctionMode hands the probe's wrapped backward and loss functions back to them
    (handle_torch_function calls the patched attribute): each backward is still one event, so the four
    micro-batches are four."""
    from torch.overrides import TorchFunctionMode

    class PassThrough(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with PassThrough():
        (f,) = _accumulate(divide=False)
    assert f.evidence["micro_batches"] == 4


def test_divided_accumulation_is_clean():
    assert _accumulate(divide=True) == []


def test_two_backwards_on_one_batch_are_not_accumulation():
    # a GAN discriminator step: a real and a fake term, each backpropagated, one batch drawn
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 2)), batch_size=16)
    D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(D.parameters(), lr=0.1)
    bce = nn.BCEWithLogitsLoss()
    with watch(D, opt, steps=2) as w:
        for (xb,) in loader:
            opt.zero_grad()
            bce(D(xb), torch.ones(len(xb), 1)).backward()
            bce(D(torch.randn(len(xb), 2)), torch.zeros(len(xb), 1)).backward()
            opt.step()
    assert [f.check for f in w.findings] == []


def _sliced(how: str, accum: int = 4):
    """Micro-batches sliced from one data tensor (e2e_sae#70), no DataLoader."""
    torch.manual_seed(0)
    X = torch.randn(128, 12)
    Y = X[:, :3].sum(1, keepdim=True)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with watch(model, opt, steps=2) as w:
        for i in range(0, 128, 4):
            xb, yb = X[i : i + 4], Y[i : i + 4]
            loss = nn.functional.mse_loss(model(xb), yb)
            if how == "undivided":
                loss.backward()  # each micro-batch's mean, undivided
            elif how == "divided":
                (loss / accum).backward()
            elif how == "same_slice_twice":  # two passes on one slice (SAM's two backwards), then a step each
                loss.backward()
                opt.step()
                opt.zero_grad()
                nn.functional.mse_loss(model(xb), yb).backward()
            if how == "same_slice_twice" or (i // 4 + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
            if w.done:
                break
    assert not w.check_errors
    return [f for f in w.findings if f.check == "accumulation_not_scaled"]


def test_undivided_accumulation_of_sliced_micro_batches_is_found_at_the_backward():
    from source_lines import line_of

    (f,) = _sliced("undivided")
    assert f.evidence["micro_batches"] == 4 and f.line == line_of("# each micro-batch's mean, undivided", _sliced)


@pytest.mark.parametrize("how", ["divided", "same_slice_twice"])
def test_divided_slices_and_two_passes_on_one_slice_are_clean(how):
    assert _sliced(how) == []


def test_a_gan_on_sliced_real_data_is_not_accumulation():
    # the discriminator's real term on a slice of the data, its fake term on the generator's output
    torch.manual_seed(0)
    data = torch.randn(64, 2)
    G, D = nn.Linear(4, 2), nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(D.parameters(), lr=0.1)
    bce = nn.BCEWithLogitsLoss()
    with watch(D, opt, steps=2) as w:
        for i in range(0, 64, 16):
            opt.zero_grad()
            bce(D(data[i : i + 16]), torch.ones(16, 1)).backward()
            bce(D(G(torch.randn(16, 4)).detach()), torch.zeros(16, 1)).backward()
            opt.step()
    assert [f.check for f in w.findings] == []


# micro-batches made in the loop (no DataLoader, no slicing): fresh inputs from one forward line ----------------------


def _made_in_loop(how: str):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def micro(n):
        for _ in range(n):
            x = torch.randn(16, 8)
            yield x, (x[:, 0] > 0).long()

    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            opt.zero_grad()
            if how == "summed":
                losses = [nn.functional.cross_entropy(model(x), y) for x, y in micro(4)]
                torch.stack(losses).sum().backward()  # SUMMED
            elif how == "averaged":
                losses = [nn.functional.cross_entropy(model(x), y) for x, y in micro(4)]
                torch.stack(losses).mean().backward()
            elif how == "gan_like":  # two batches through two forward lines (real and fake), one step
                x = torch.randn(16, 8)
                nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long()).backward()
                z = torch.randn(16, 8)
                nn.functional.cross_entropy(model(z), torch.zeros(16, dtype=torch.long)).backward()
            elif how == "two_terms":  # DANN-style: two inputs through one line, two losses summed, one backward
                a, b = torch.randn(16, 8), torch.randn(16, 8)
                ha, hb = model(a), model(b)
                loss = nn.functional.cross_entropy(ha, (a[:, 0] > 0).long())
                (loss + nn.functional.mse_loss(hb, torch.zeros(16, 3))).backward()
            else:
                for x, y in micro(4):
                    loss = nn.functional.cross_entropy(model(x), y)
                    (loss / 4 if how == "divided" else loss).backward()  # EACH
            opt.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "accumulation_not_scaled"]


def _marked(marker: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(_made_in_loop)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def test_undivided_micro_batches_made_in_the_loop_are_found():
    (f,) = _made_in_loop("each")
    assert f.evidence["micro_batches"] == 4 and f.line == _marked("# EACH")


def test_one_backward_of_the_summed_micro_batch_losses_is_found_where_they_are_summed():
    (f,) = _made_in_loop("summed")
    assert f.evidence["micro_batches"] == 4 and f.line == _marked("# SUMMED")


@pytest.mark.parametrize("how", ["divided", "averaged", "gan_like", "two_terms"])
def test_divided_averaged_or_two_forward_lines_are_clean(how):
    assert _made_in_loop(how) == []


def _accelerate(use_context: bool) -> list:
    """A real accelerate loop with gradient_accumulation_steps=4, with or without ``accelerator.accumulate`` (the
    development programs batch14/bugs/accelerate_grad_accum_without_accumulate_ctx.py, from
    https://github.com/tianweiy/DMD2/issues/23, and its correct twin
    batch14/clean/accelerate_accumulate_context_with_clipping.py)."""
    import inspect

    accelerate = pytest.importorskip("accelerate")
    from accelerate.state import AcceleratorState, GradientState

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        with watch(model, opt, steps=2) as w:
            accelerator = accelerate.Accelerator(cpu=True, gradient_accumulation_steps=4)
            model, opt = accelerator.prepare(model, opt)
            for _ in range(12):
                x, y = torch.randn(8, 8), torch.randint(0, 3, (8,))
                if use_context:
                    with accelerator.accumulate(model):
                        accelerator.backward(nn.functional.cross_entropy(model(x), y))
                        opt.step()
                        opt.zero_grad()
                else:
                    line = inspect.currentframe().f_lineno + 1
                    accelerator.backward(nn.functional.cross_entropy(model(x), y))
                    opt.step()
                    opt.zero_grad()
    finally:
        GradientState._reset_state()  # the process-wide state accelerate keeps: later tests start without it
        AcceleratorState._reset_state(reset_partial_state=True)
    assert not w.check_errors, w.check_errors
    found = [f for f in w.findings if f.check == "accelerate_accumulation_ignored"]
    assert all(f.line == line for f in found)
    return found


def test_accelerate_accumulation_set_but_never_entered_is_found_at_the_backward():
    (f,) = _accelerate(use_context=False)
    assert f.evidence["gradient_accumulation_steps"] == 4


def test_accelerate_accumulation_inside_its_context_is_clean():
    assert _accelerate(use_context=True) == []
