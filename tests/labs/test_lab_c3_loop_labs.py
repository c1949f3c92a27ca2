"""Labs C3.1, C3.2, C3.3, C3.6 in their quick budget: measured values that could have failed, verdicts that
follow from them, and rules that flip on the contrary behaviour."""

from __future__ import annotations

from verdict_checks import assert_flips, assert_verdict_follows, judged_measurements

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def _run(lab_id, tmp_path):
    (lab,) = select_labs([lab_id])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    return res, {m.key: m for m in res.measurements}


def _behaviours_demonstrated(res, keys):
    judged = judged_measurements(res)
    assert set(judged) == set(keys)
    for key in keys:
        assert judged[key].verdict.kind == "demonstrated", judged[key].verdict
        assert_verdict_follows(judged[key])
        assert_flips(judged[key], False)


def test_lab_c3_1_traces_the_protocol_in_loop_order(tmp_path):
    res, m = _run("C3.1", tmp_path)
    assert m["loop_objects"].value is True
    assert m["loop_objects"].detail.startswith("Dataset.__getitem__ x 4 -> Module.__call__")
    assert m["grads_per_step"].value == 36  # 4 blocks x 8 tensors + wte + wpe + ln_f (2); head tied
    _behaviours_demonstrated(res, ["loop_objects"])


def test_lab_c3_2_accumulation_and_growth(tmp_path):
    res, m = _run("C3.2", tmp_path)
    assert m["accumulation_rel_diff"].value < 1e-5 and m["accumulation"].value is True
    assert abs(m["accumulation_no_divide"].value - 3.0) < 1e-3  # k = 4: ||4g - g|| / ||g||
    assert m["grad_norm_growth"].value > 2 and m["missing_zero_grad"].value is True
    assert (tmp_path / res.figures[0]).is_file()
    _behaviours_demonstrated(res, ["accumulation", "missing_zero_grad"])


def test_lab_c3_3_memory_grows_only_without_no_grad(tmp_path):
    res, m = _run("C3.3", tmp_path)
    assert m["eval_memory_no_grad"].value == 0
    assert m["eval_memory"].value > 5 * m["eval_memory_item"].value > 0  # 6 steps kept vs 1 step
    assert m["eval_memory_grows"].value is True
    _behaviours_demonstrated(res, ["eval_memory_grows"])


def test_lab_c3_6_loop_lr_matches_the_drawn_schedule(tmp_path):
    res, m = _run("C3.6", tmp_path)
    assert m["schedule_max_diff"].value == 0 and m["schedule"].value is True
    # the choices are observed in a running step, not found in the source text
    assert "cross_entropy input torch.float32" in m["loss_fp32"].detail
    assert "at optimizer.step 1.0" in m["clip"].detail
    assert "max |dL/dlogits| 0" in m["ignore_index"].detail
    assert res.figures and res.figures[0].endswith("c3_6_lr_schedule.png")
    _behaviours_demonstrated(res, ["schedule", "loss_fp32", "clip", "ignore_index", "set_to_none"])


def test_lab_c3_3_an_eval_loop_that_frees_its_graphs_flips_the_verdict():
    """The lab's measurement run on eval loops where the claim should fail: reading the loss with .item() frees
    each graph and under no_grad nothing is saved, so memory does not grow one step per step; the loop that keeps
    the loss tensor grows. Saved bytes count each storage once: the char LM's q, k, v are views of one qkv output."""
    from expkit.labs.lab_c3_3_no_grad import GROWS, grows_one_step_per_step
    from expkit.train import CharLMConfig
    from expkit.train.probes import measure_eval_memory

    cfg = CharLMConfig(n_layer=1, n_embd=64, n_head=2)
    kw = dict(model_config=cfg, steps=3, batch_size=2, seq_len=16)
    kept = measure_eval_memory(mode="grad_keep_loss", **kw).saved_bytes
    item = measure_eval_memory(mode="grad_item", **kw).saved_bytes
    nograd = measure_eval_memory(mode="no_grad", **kw).saved_bytes
    assert GROWS.judge(grows_one_step_per_step(kept)).kind == "demonstrated"
    assert GROWS.judge(grows_one_step_per_step(item)).kind == "not reproduced"
    assert GROWS.judge(grows_one_step_per_step(nograd)).kind == "not reproduced"


def test_c3_3_views_of_one_storage_count_once():
    """One step of the 1-layer char LM, counted by hand: the qkv output (B, T, 3C) is saved once, although the
    attention saves its q, k and v views; counting each view's whole storage would add it three times."""
    import torch

    from expkit.train import CharLMConfig
    from expkit.train.probes import measure_eval_memory

    cfg = CharLMConfig(n_layer=1, n_embd=64, n_head=2)
    per_step = measure_eval_memory(model_config=cfg, mode="grad_keep_loss", steps=1, batch_size=2, seq_len=16)
    storages: dict[int, int] = {}
    views = 0

    def pack(t):
        nonlocal views
        views += 1
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t.detach()

    from expkit.train import CharLM

    torch.manual_seed(0)
    model = CharLM(cfg).eval()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    from expkit.train.probes import _batch, _loss

    x, y = _batch(2, 16, 0, cfg.vocab_size)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = _loss(model, x, y)
    by_hand = sum(n for ptr, n in storages.items() if ptr not in params)
    assert per_step.saved_bytes[0] == by_hand
    assert views > len(storages)  # some saved tensors were views of a storage already counted
    del loss
