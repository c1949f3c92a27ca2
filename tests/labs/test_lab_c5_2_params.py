from verdict_checks import assert_computed, assert_flips, assert_verdicts_follow

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab
from expkit.models.description import load_model_description


def test_lab_c5_2_param_accounting(tmp_path):
    res = run_lab(select_labs(["C5.2"])[0], out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    assert m["total_params"].value == 494_032_768 and m["trainable"].value == 8_798_208
    assert m["untied"].value == 494_032_768 + 151_936 * 896  # the lost tie counts the head again
    counts = ("arch", "total_params", "trainable", "fraction", "state")
    assert all(m[k].verdict.kind == "reproduced" for k in counts)
    # issue 36: arithmetic on a typed-in config.json is computed, not measured, and counted apart at the report's top
    assert all(m[k].provenance == "computed" and "computed" in m[k].verdict.reason for k in counts)
    assert m["lora_fits_full_does_not"].provenance == "measured"  # the capped steps were run
    assert_computed(m, "untied")  # issue 36: a meta-device count like the five above
    from expkit.render.report import verdict_counts_by_provenance

    by_source = verdict_counts_by_provenance([res])
    assert by_source["computed"]["reproduced"] == 5 and by_source["measured"]["reproduced"] == 0
    assert_flips(m["arch"], 3)
    assert_flips(m["total_params"], m["untied"].value)  # counting under init_empty_weights would not be 494M
    assert_flips(m["fraction"], 1.77)  # peft's own print (of base + adapters) is 1.75%
    assert_flips(m["state"], 2 * 494_032_768)
    # C5.4 run: under one cap the full step runs out of memory and the LoRA step fits
    possible = m["lora_fits_full_does_not"]
    assert possible.value is True and possible.verdict.kind == "demonstrated"
    assert "full OOM, LoRA fitted" in possible.detail
    assert_flips(possible, False)


def test_lab_c5_2_runs_that_flip_the_verdicts():
    """The lab's measurements on inputs where the claims fail: (1) the capped steps under a cap over the full
    step's predicted peak, where the full fine-tune fits too, so LoRA decides nothing; (2) the parameter count of
    the same config with untied embeddings (the head counted apart), which is not 494M."""
    from expkit.labs.lab_c5_2_param_accounting import POSSIBLE, TOTAL_RULE, run_full_vs_lora_capped
    from expkit.memory import count_parameters

    roomy = run_full_vs_lora_capped(0, cap_bytes=1 << 40)  # 1 TiB: nothing runs out
    assert roomy.full_oom is False and roomy.lora_oom is False
    assert POSSIBLE.judge(roomy.possible).kind == "not reproduced"

    spec = load_model_description("qwen2.5-0.5b")
    total_rule = TOTAL_RULE
    assert total_rule.judge(count_parameters(spec).total_params).kind == "reproduced"
    untied = count_parameters({**spec.raw, "tie_word_embeddings": False}).total_params
    assert untied == 494_032_768 + 151_936 * 896
    assert total_rule.judge(untied).kind == "not reproduced"
