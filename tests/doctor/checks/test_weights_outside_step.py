"""weights_changed_outside_step: weights an optimizer holds that change between its steps without it. A
re-initialisation inside the loop is found at its ``apply`` line; SAM's two passes, which move the weights to
w + e and back under no_grad (equal to rounding, not bitwise), are correct and stay silent, and so do weights only
pulled toward zero after the step (WGAN's clipping, outside clean program batch17/clean/
wgan_weight_clipping_rmsprop_mixture.py from https://github.com/jiamings/wgan/issues/2; weight decay by hand)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "weights_changed_outside_step"


def _init(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=0.5)


def _on_param(param: torch.Tensor) -> None:
    param.clamp_(-0.05, 0.05)  # meant for the gradient: a post-accumulate-grad hook is given the parameter


def _on_grad(param: torch.Tensor) -> None:
    param.grad.clamp_(-1, 1)


def _train(how: str):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with watch(model, opt, steps=2) as w:
        for p in model.parameters() if how in ("hook_on_param", "hook_on_grad") else ():
            # a post-accumulate-grad hook gets the parameter: clamping it clamps the weights, not the gradient
            hook = _on_param if how == "hook_on_param" else _on_grad
            p.register_post_accumulate_grad_hook(hook)  # the hook's registration
        for _ in range(3):
            x, y = torch.randn(16, 10), torch.randint(0, 3, (16,))
            if how == "reinit":
                model.apply(_init)  # the re-initialisation
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            if how == "sam":  # arXiv:2010.01412: ascend to w + e, take the gradient there, come back
                with torch.no_grad():
                    norm = torch.norm(torch.stack([p.grad.norm() for p in model.parameters()]))
                    eps = [0.5 * p.grad / (norm + 1e-12) for p in model.parameters()]
                    for p, e in zip(model.parameters(), eps, strict=True):
                        p.add_(e)
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                with torch.no_grad():
                    for p, e in zip(model.parameters(), eps, strict=True):
                        p.sub_(e)
            if how == "decay_before_step":  # weight decay by hand between backward() and step(), no hook
                with torch.no_grad():
                    for p in model.parameters():
                        p.mul_(0.99)
            opt.step()
            if how in ("clamp", "decay"):  # WGAN's weight clipping (arXiv:1701.07875), weight decay by hand
                with torch.no_grad():
                    for p in model.parameters():
                        p.clamp_(-0.05, 0.05) if how == "clamp" else p.mul_(0.99)
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def test_a_reinitialisation_inside_the_loop_is_found_at_the_apply_line():
    (f,) = _train("reinit")
    assert f.line == _line_of("# the re-initialisation", _train)


def test_a_post_accumulate_grad_hook_that_writes_the_weights_is_found_at_its_registration():
    # the outside development program batch19/bugs/spiral_mlp_per_param_grad_value_hooks.py (from
    # https://github.com/pytorch/pytorch/issues/187268): the hook written like a register_hook hook
    (f,) = _train("hook_on_param")
    assert f.line == _line_of("# the hook's registration", _train) and "post-accumulate-grad" in f.message


@pytest.mark.parametrize("how", ["plain", "sam", "clamp", "decay", "hook_on_grad", "decay_before_step"])
def test_plain_steps_and_sams_move_and_restore_are_silent(how):
    assert _train(how) == []


def _new_rows(decay: float, hook: str):
    """Token rows 6-9 of an embedding trained, rows 0-5 meant frozen by a gradient hook (``mask``), or a hook that
    clamps (``clamp``), or none with rows 0-5 absent from the batches (``absent``)."""
    torch.manual_seed(0)
    emb, head = nn.Embedding(10, 4), nn.Linear(4, 10)
    head.requires_grad_(False)
    mask = torch.zeros(10, 1)
    mask[6:] = 1.0
    with watch(emb, None, steps=2) as w:
        if hook == "mask":
            emb.weight.register_hook(lambda g: g * mask)
        elif hook == "clamp":
            emb.weight.register_hook(lambda g: g.clamp(-1, 1))
        opt = torch.optim.AdamW([emb.weight], lr=0.01, weight_decay=decay)  # the optimizer
        for _ in range(3):
            ids = torch.randint(0, 10, (8, 5)) if hook != "absent" else torch.randint(6, 10, (8, 5))
            loss = F.cross_entropy(head(emb(ids)).flatten(0, 1), ids.flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "masked_rows_updated"]


def test_rows_masked_by_a_gradient_hook_that_weight_decay_moves_are_found_at_the_optimizer():
    # the outside development program batch19/bugs/gpt2_new_token_rows_grad_mask_adamw.py (from
    # https://github.com/baichuan-inc/Baichuan2/issues/383): new token rows trained, the old ones masked, AdamW
    (f,) = _new_rows(0.1, "mask")
    assert f.line == _line_of("# the optimizer", _new_rows)
    assert f.evidence["masked_rows"] == 6 and f.evidence["weight_decay"] == 0.1


@pytest.mark.parametrize(("decay", "hook"), [(0.0, "mask"), (0.1, "clamp"), (0.1, "absent")])
def test_masked_rows_without_decay_and_unmasked_rows_are_silent(decay, hook):
    # the twin: batch19/clean/gpt2_reserved_token_rows_masked_grad_no_decay.py; rows absent from the batches (no
    # hook) decay under AdamW as any optimizer of the field decays them: not a mask the program wrote
    assert _new_rows(decay, hook) == []
