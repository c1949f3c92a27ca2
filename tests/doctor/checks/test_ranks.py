"""ranks_out_of_sync / ranks_same_batch: the parent compares the ranks' digests of weights, gradients and inputs
(rank_findings on hand-made events; the real torchrun and mp.spawn runs are in tests/doctor/test_outside.py)."""

from __future__ import annotations

from expkit.doctor.checks.ranks import rank_findings


def _state(rank, step, *, weights=(1.0, 2.0, 3.0), grads=(0.5, 0.7, 3.0), inputs=None, sites=None):
    return {
        "event": "rank_state",
        "step": step,
        "optimizer": "SGD",
        "dist_rank": rank,
        "world": 2,
        "weights": list(weights),
        "grads": list(grads),
        "inputs": [float(rank), 1.0 + rank, 4.0] if inputs is None else list(inputs),
        "sites": sites or {"grads": ["train.py", 30], "weights": ["train.py", 12], "inputs": ["train.py", 20]},
    }


def test_replicas_in_sync_on_different_data_are_clean():
    events = [_state(r, s) for s in (1, 2) for r in (0, 1)]
    assert rank_findings(events) == []


def test_weights_that_differ_before_the_first_step_name_the_model_line():
    events = [_state(0, 1), _state(1, 1, weights=(1.5, 2.5, 3.0))]
    (f,) = rank_findings(events)
    assert (f.check, f.file, f.line, f.step) == ("ranks_out_of_sync", "train.py", 12, 1)


def test_gradients_that_differ_name_the_gradient_site_once():
    events = [_state(r, s, grads=(0.5 + r, 0.7 + r, 3.0)) for s in (1, 2) for r in (0, 1)]
    (f,) = rank_findings(events)
    assert (f.check, f.line) == ("ranks_out_of_sync", 30)
    assert f.evidence["grads_abs_sum_by_rank"] == [0.7, 1.7]


def test_the_same_input_on_every_rank_at_both_steps_is_found_at_the_loader():
    events = [_state(r, s, inputs=(1.0, 2.0, 4.0)) for s in (1, 2) for r in (0, 1)]
    (f,) = rank_findings(events)
    assert (f.check, f.line, f.evidence["steps_with_equal_inputs"]) == ("ranks_same_batch", 20, 2)


def test_a_single_rank_is_not_compared():
    assert rank_findings([_state(0, 1, weights=(9.0, 9.0, 3.0))]) == []


def test_two_optimizers_of_one_type_are_compared_apart():
    # a GAN under DDP: generator and discriminator both Adam; each is compared with its own kind on the other rank
    events = []
    for r in (0, 1):
        for s in (1, 2):
            g = _state(r, s)
            d = _state(r, s, weights=(7.0, 8.0, 9.0), grads=(0.1, 0.2, 9.0))
            g["optimizer"], d["optimizer"] = "Adam#0", "Adam#1"
            events += [g, d]
    assert rank_findings(events) == []


def test_a_parameter_replaced_after_the_ddp_wrap_is_named_at_its_assignment(tmp_path):
    # one gloo rank is enough to build DDP; the child-side helper names the line that put the unhooked parameter in
    import inspect

    import pytest

    torch = pytest.importorskip("torch")
    from torch import nn

    from expkit.doctor import watch
    from expkit.doctor.checks.ranks import RankState
    from expkit.doctor.probe import StepEvent

    dist = torch.distributed
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        with watch(net, torch.optim.SGD(net.parameters(), lr=0.1), steps=1) as w:
            ddp = nn.parallel.DistributedDataParallel(net, find_unused_parameters=True)
            net[2].bias = nn.Parameter(torch.zeros(2))  # replaced after the wrap
            ddp(torch.randn(3, 4)).sum().backward()
            opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
            site = RankState()._unhooked(w.probe, StepEvent(opt, 1, list(net.parameters())))
        lines, first = inspect.getsourcelines(test_a_parameter_replaced_after_the_ddp_wrap_is_named_at_its_assignment)
        assert site is not None and site[1] == first + next(i for i, t in enumerate(lines) if "# replaced after" in t)
    finally:
        dist.destroy_process_group()


def test_learning_rates_that_differ_on_equal_gradients_are_found_at_the_step():
    # batch 4's DDP program computes the rate from each rank's own token count (nanochat#857): equal weights and
    # all-reduced gradients, different rates, so the replicas drift apart from the first step on
    events = [{**_state(r, s), "lrs": [0.05 - 0.001 * r * s]} for s in (1, 2) for r in (0, 1)]
    for ev in events:
        ev["sites"]["lrs"] = ["train.py", 48]
    (f,) = rank_findings(events)
    assert (f.check, f.line, f.step) == ("ranks_out_of_sync", 48, 1)
    assert f.evidence["lrs_by_rank"] == [[0.05], [0.049]]


def test_equal_learning_rates_and_events_without_rates_are_clean():
    same = [{**_state(r, s), "lrs": [0.05, 0.01]} for s in (1, 2) for r in (0, 1)]
    assert rank_findings(same) == []
    assert rank_findings([_state(r, s) for s in (1, 2) for r in (0, 1)]) == []  # an older child: no "lrs"


def test_shuffling_samplers_seeded_apart_are_found_at_the_loader():
    # pattern of NVlabs/LongLive#71: DistributedSampler(seed=base * rank) makes the ranks' shards overlap
    events = [{**_state(r, s), "sampler_seed": 1234 * r} for s in (1, 2) for r in (0, 1)]
    (f,) = rank_findings(events)
    assert (f.check, f.line, f.evidence["seeds_by_rank"]) == ("ranks_shards_overlap", 20, [0, 1234])


def test_one_seed_on_every_rank_or_no_shuffling_sampler_is_clean():
    assert rank_findings([{**_state(r, s), "sampler_seed": 7} for s in (1, 2) for r in (0, 1)]) == []
    assert rank_findings([{**_state(r, s), "sampler_seed": None} for s in (1, 2) for r in (0, 1)]) == []


def test_without_a_loader_the_same_input_is_named_at_the_programs_seeding_call():
    # every rank seeds the global generator alike and draws its batch in the loop: the rank's probe reports the
    # last seeding call as the inputs' site (seen here in one process: the rank side of the comparison)
    import torch
    from source_lines import line_of
    from torch import nn

    from expkit.doctor import watch
    from expkit.doctor.checks.ranks import RankState

    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        torch.manual_seed(7)  # the seeding call
        for _ in range(2):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        site = RankState._seeded_at(w.probe)
    here = test_without_a_loader_the_same_input_is_named_at_the_programs_seeding_call
    assert site is not None and site[1] == line_of("# the seeding call", here)


def test_weights_loaded_after_the_wrap_on_one_rank_are_named_at_the_load():
    loaded = {"grads": ["train.py", 30], "weights": ["train.py", 12], "inputs": ["train.py", 20]}
    events = [_state(0, 1, sites={**loaded, "weights_loaded": ["train.py", 14]}), _state(1, 1, weights=(1.5, 2.5, 3.0))]
    (f,) = rank_findings(events)
    assert (f.check, f.line) == ("ranks_out_of_sync", 14)
    assert "loaded into the wrapped model" in f.message and "before wrapping" in f.fix


def test_a_module_trained_beside_the_ddp_wrapper_and_autograd_grad_over_wrapped_weights_are_named(tmp_path):
    # the child side: a learnable loss module outside every wrapper is named where it was built; a
    # torch.autograd.grad call over the wrapped weights is one DDP never all-reduces; a load into the wrapped model
    import inspect

    import pytest

    torch = pytest.importorskip("torch")
    from torch import nn

    from expkit.doctor import watch
    from expkit.doctor.checks.ranks import RankState, _ddp_holding
    from expkit.doctor.probe import CallEvent, StepEvent

    dist = torch.distributed
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        with watch(net, torch.optim.SGD(net.parameters(), lr=0.1), steps=1) as w:
            ddp = nn.parallel.DistributedDataParallel(net)
            head = nn.Linear(2, 3)  # beside the wrapper
            loss = head(ddp(torch.randn(3, 4))).sum()
            inner = list(ddp.parameters())
            grads = torch.autograd.grad(loss, inner, retain_graph=True)
            loss.backward()
            params = inner + list(head.parameters())
            opt = torch.optim.SGD(params, lr=0.1)
            site = RankState._outside_ddp(w.probe, StepEvent(opt, 1, params))
            by_hand = RankState._of_ddp(w.probe, CallEvent("autograd_grad", None, (loss, inner), {}, grads))
            alone = RankState._of_ddp(w.probe, CallEvent("autograd_grad", None, (loss, [head.weight]), {}, grads))
            held = (_ddp_holding(net[2]), _ddp_holding(head))
        lines, first = inspect.getsourcelines(
            test_a_module_trained_beside_the_ddp_wrapper_and_autograd_grad_over_wrapped_weights_are_named
        )
        assert site is not None and site[1] == first + next(i for i, t in enumerate(lines) if "# beside the" in t)
        assert (by_hand, alone, held) == (True, False, (True, False))
    finally:
        dist.destroy_process_group()
