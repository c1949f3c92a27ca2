"""gradients_discarded: gradients a backward computed were cleared before any step used them and refilled by
another backward (zero_grad inside the accumulation loop), written three ways; and the correct programs that
clear gradients between backwards on purpose (accumulation done right, a GAN, SAM, adversarial training on the
input's gradient, LBFGS's closure, gradient surgery, one backward before the loop), which must stay silent."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "gradients_discarded"


def _found(w):
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def _data(n=128):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    return model, torch.randn(n, 8), torch.randint(0, 3, (n,))


def _accumulate(how: str, accum: int = 4):
    model, X, y = _data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for k, i in enumerate(range(0, 128, 8)):
            if how == "optimizer":
                opt.zero_grad()  # clear: optimizer
            elif how == "module":
                model.zero_grad()  # clear: module
            elif how == "set_none":
                for p in model.parameters():
                    p.grad = None
            loss = F.cross_entropy(model(X[i : i + 8]), y[i : i + 8]) / accum
            loss.backward()  # refill
            if (k + 1) % accum == 0:
                opt.step()
                if how == "right":
                    opt.zero_grad()
    return _found(w)


def test_zero_grad_inside_the_accumulation_loop_is_found_at_the_zero_grad():
    (f,) = _accumulate("optimizer")
    assert f.line == _line_of("# clear: optimizer", _accumulate)
    assert f.evidence["discarded_backwards"] == 3


def test_model_zero_grad_every_other_micro_batch_is_found_at_both_steps():
    (f,) = _accumulate("module", accum=2)  # one backward thrown away per window, in both windows
    assert f.line == _line_of("# clear: module", _accumulate)


def test_grads_set_to_none_by_hand_are_found_at_the_refilling_backward():
    (f,) = _accumulate("set_none")
    assert f.line == _line_of("# refill", _accumulate)


def test_accumulation_done_right_is_clean():
    assert _accumulate("right") == []


def _loop(kind: str):
    model, X, y = _data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        if kind == "probe_once":  # a backward before the loop, cleared once
            F.cross_entropy(model(X[:8]), y[:8]).backward()
        for i in range(0, 48, 16):
            xb, yb = X[i : i + 16], y[i : i + 16]
            opt.zero_grad()
            if kind == "sam":  # ascend to the worst nearby weights, then step with the gradient there
                F.cross_entropy(model(xb), yb).backward()
                eps = [0.05 * p.grad / (p.grad.norm() + 1e-12) for p in model.parameters()]
                with torch.no_grad():
                    for p, e in zip(model.parameters(), eps, strict=True):
                        p.add_(e)
                opt.zero_grad()
                F.cross_entropy(model(xb), yb).backward()
                with torch.no_grad():
                    for p, e in zip(model.parameters(), eps, strict=True):
                        p.sub_(e)
            elif kind == "fgsm":  # the first backward is for the input's gradient
                xa = xb.clone().requires_grad_(True)
                F.cross_entropy(model(xa), yb).backward()
                x_adv = (xb + 0.1 * xa.grad.sign()).detach()
                opt.zero_grad()
                F.cross_entropy(model(x_adv), yb).backward()
            elif kind == "surgery":  # two task gradients kept, combined and assigned
                grads = []
                for t in range(2):
                    opt.zero_grad()
                    (F.cross_entropy(model(xb), yb) * (t + 1)).backward()
                    grads.append([p.grad.clone() for p in model.parameters()])
                for p, g0, g1 in zip(model.parameters(), *grads, strict=True):
                    p.grad = 0.5 * (g0 + g1)
            else:
                F.cross_entropy(model(xb), yb).backward()
            opt.step()
    return _found(w)


@pytest.mark.parametrize("kind", ["sam", "fgsm", "surgery", "probe_once"])
def test_deliberate_clears_between_backwards_are_clean(kind):
    assert _loop(kind) == []


def test_gan_whose_backward_fills_the_other_models_gradients_is_clean():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    D = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
    opt_g, opt_d = torch.optim.Adam(G.parameters(), 1e-3), torch.optim.Adam(D.parameters(), 1e-3)
    real = torch.randn(64, 2) + 1
    ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)
    with watch(G, opt_g, steps=2) as w:
        for i in range(3):
            fake = G(torch.randn(16, 4))
            d_loss = F.binary_cross_entropy_with_logits(D(real[16 * i : 16 * i + 16]), ones)
            d_loss = d_loss + F.binary_cross_entropy_with_logits(D(fake), zeros)  # not detached: fills G too
            opt_d.zero_grad()
            d_loss.backward(retain_graph=True)
            opt_d.step()
            opt_g.zero_grad()
            F.binary_cross_entropy_with_logits(D(fake), ones).backward()
            opt_g.step()
    assert _found(w) == []


def test_lbfgs_closure_is_clean():
    model, X, y = _data()
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(model(X), y)
        loss.backward()
        return loss

    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            opt.step(closure)
    assert _found(w) == []
