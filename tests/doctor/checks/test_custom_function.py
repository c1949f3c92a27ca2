"""backward_ignores_grad_output: a custom autograd Function whose backward returns the local derivative without
multiplying it by grad_output (batch 10's dev program, written from a public report), written two ways, and the
correct Functions that must stay silent: straight-through estimators (identity, input mask, clamp), gradient
reversal with a non-tensor argument, several outputs, once_differentiable, save_for_backward, torch's own
Functions (reentrant checkpointing)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of  # noqa: E402
from torch import nn  # noqa: E402
from torch.autograd.function import once_differentiable  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

from expkit.doctor import watch  # noqa: E402
from expkit.doctor.probe import Probe  # noqa: E402

NAME = "backward_ignores_grad_output"


class ForgetfulSigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return y * (1 - y)  # bug: sigmoid


class OnesSTE(torch.autograd.Function):
    """A hard threshold with a non-tensor argument, new-style (setup_context), once_differentiable: its backward
    names grad_output but only for its shape, and returns early with no gradient when none is needed."""

    @staticmethod
    def forward(x, threshold):
        return (x > threshold).to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        if not ctx.needs_input_grad[0]:
            return None, None
        (x,) = ctx.saved_tensors
        window = (x.abs() <= 1).to(grad_output.dtype)
        return torch.ones_like(grad_output) * window, None  # bug: ones


class Sigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)


class SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.sign(x)

    @staticmethod
    def backward(ctx, g):
        return g


class MaskedSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype)


class ClampedSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, g):
        return g.clamp(-1.0, 1.0)


class ReverseGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        grad = g.neg()
        return grad * ctx.lam, None


class SinCos(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        return g_sin * x.cos() - g_cos * x.sin()


class MaskedDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p):
        mask = (torch.rand_like(x) > p).to(x.dtype) / (1 - p)
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g * mask, None


class MulConstant(torch.autograd.Function):
    """The PyTorch handbook's extending-autograd example as batch15/bugs/custom_mulconstant_backward_drops_constant.py
    has it (from https://github.com/zergtant/pytorch-handbook/issues/69): linear in grad_output, and not the
    derivative unless ``right``."""

    @staticmethod
    def forward(ctx, x, constant, right):
        ctx.constant, ctx.right = constant, right
        return x * constant

    @staticmethod
    def backward(ctx, g):
        return (g * ctx.constant if ctx.right else g), None, None  # bug: constant


class NearestCode(torch.autograd.Function):
    """A VQ-VAE quantiser written as a Function, as batch19/clean/vqvae_straight_through_autograd_function.py has
    it (from https://github.com/zalandoresearch/pytorch-vq-vae/issues/6): the nearest codebook row, constant in the
    encoder's output (which gets the gradient straight through) and moving with the codebook (which gets none here:
    its own loss trains it). Not the forward's derivative, on purpose."""

    @staticmethod
    def forward(ctx, z, codebook):
        return codebook[torch.cdist(z, codebook).argmin(1)]

    @staticmethod
    def backward(ctx, g):
        return g, None


class Scale(torch.autograd.Function):
    """``x * s`` with a tensor scale: the backward for ``x`` leaves ``s`` out unless ``right`` (smooth in both)."""

    @staticmethod
    def forward(ctx, x, s, right):
        ctx.save_for_backward(x, s)
        ctx.right = right
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return (g * s if ctx.right else g), (g * x).sum(0), None  # bug: scale


CODEBOOK = torch.randn(6, 16)
SCALE = torch.full((16,), 0.1)


def _act(how: str, h):
    if how == "codebook_ste":
        return h + NearestCode.apply(h, CODEBOOK.requires_grad_(True))
    if how in ("scale", "correct_scale"):
        return Scale.apply(h, SCALE.requires_grad_(True), how == "correct_scale")
    if how == "mul_constant":
        return MulConstant.apply(h, 0.1, False)
    if how == "correct_mul_constant":
        return MulConstant.apply(h, 0.1, True)
    if how == "sigmoid":
        return ForgetfulSigmoid.apply(h)
    if how == "ones":
        return OnesSTE.apply(h, 0.0)
    if how == "correct_sigmoid":
        return Sigmoid.apply(h)
    if how == "sign_ste":
        return SignSTE.apply(h)
    if how == "masked_ste":
        return MaskedSTE.apply(h)
    if how == "clamped_ste":
        return ClampedSTE.apply(h)
    if how == "reverse":
        return torch.relu(ReverseGrad.apply(h, 0.5))
    if how == "two_outputs":
        s, c = SinCos.apply(h)
        return s * c
    if how == "dropout":
        return MaskedDropout.apply(torch.relu(h), 0.25)
    if how == "checkpoint":
        return checkpoint(torch.tanh, h, use_reentrant=True)
    raise AssertionError(how)


def _loop(how: str):
    torch.manual_seed(0)
    l1, l2 = nn.Linear(8, 16), nn.Linear(16, 3)
    model = nn.Sequential(l1, nn.Identity(), l2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
            loss = F.cross_entropy(l2(_act(how, l1(x))), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check in (NAME, "backward_not_derivative")]


@pytest.mark.parametrize(
    ("how", "cls", "marker"), [("sigmoid", ForgetfulSigmoid, "sigmoid"), ("ones", OnesSTE, "ones")]
)
def test_a_backward_that_leaves_grad_output_out_is_named_at_its_return(how, cls, marker):
    (f,) = _loop(how)
    assert f.line == line_of(f"# bug: {marker}", cls)
    assert f.file is not None and f.file.endswith("test_custom_function.py")
    assert f.evidence["function"] == cls.__qualname__
    assert f.evidence["grad_norm_for_zero_grad_output"] > 0
    assert f.evidence["linearity_error"] > 0.1


def test_a_linear_backward_that_is_not_the_derivative_fails_the_adjoint_test():
    (f,) = _loop("mul_constant")
    assert f.check == "backward_not_derivative" and f.line == line_of("# bug: constant", MulConstant)
    forward, backward = f.evidence["directional_derivative"], f.evidence["backward_along_v"]
    assert backward == pytest.approx(10 * forward, rel=1e-3)  # the constant 0.1 left out: ten times the gradient
    # with two tensor inputs, the forward smooth in both: still tested (a straight-through input is not)
    (f,) = _loop("scale")
    assert f.check == "backward_not_derivative" and f.line == line_of("# bug: scale", Scale)


@pytest.mark.parametrize(
    "how",
    [
        "correct_sigmoid",
        "sign_ste",
        "masked_ste",
        "clamped_ste",
        "reverse",
        "two_outputs",
        "dropout",
        "checkpoint",
        "correct_mul_constant",
        "codebook_ste",
        "correct_scale",
    ],
)
def test_correct_custom_functions_are_clean(how):
    assert _loop(how) == []


def test_a_function_first_called_without_grad_is_judged_at_its_first_training_call():
    torch.manual_seed(0)
    lin = nn.Linear(4, 4)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    with watch(lin, opt, steps=1) as w:
        with torch.no_grad():
            ForgetfulSigmoid.apply(lin(torch.randn(2, 4)))
        loss = ForgetfulSigmoid.apply(lin(torch.randn(2, 4))).sum()
        loss.backward()
        opt.step()
    assert not w.check_errors, w.check_errors
    assert [f.line for f in w.findings if f.check == NAME] == [line_of("# bug: sigmoid", ForgetfulSigmoid)]


def test_the_replay_keeps_the_programs_random_state():
    def run(armed: bool) -> tuple[float, float]:
        torch.manual_seed(0)
        lin = nn.Linear(6, 6)
        opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        probe = Probe(watch_steps=1, sink=lambda e: None, checks=[NAME]) if armed else None
        if probe is not None:
            probe.install()
        loss = MaskedDropout.apply(lin(torch.randn(4, 6)), 0.5).sum()
        loss.backward()
        opt.step()
        if probe is not None:
            probe.finish()
        return float(loss.detach()), float(torch.rand(()))

    original = torch.autograd.Function.__dict__["apply"]
    assert run(armed=True) == run(armed=False)
    assert torch.autograd.Function.__dict__["apply"] is original  # the wrapper is gone after the watch
