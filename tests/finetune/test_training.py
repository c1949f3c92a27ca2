"""LoRA SFT through TRL on the quick demo model: loss per step, adapter, contract, run record, bad arguments."""

from __future__ import annotations

import json
import warnings

import pytest

from expkit.errors import CheckFailed, UsageError
from expkit.finetune.chatdata import generate_chat_examples
from expkit.finetune.stopping import StopQuery, check_stopping
from expkit.finetune.training import SFTSettings, train_lora_sft

warnings.filterwarnings("ignore", category=FutureWarning)


@pytest.fixture(scope="module")
def trained(demo_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("sft")
    settings = SFTSettings(steps=3, batch_size=4, learning_rate=2e-3, num_threads=1, merge=True, lora_r=4)
    result = train_lora_sft(
        model_dir=demo_model_dir,
        examples=generate_chat_examples(n=24, seed=3),
        out_dir=out,
        settings=settings,
        store=out / "runs",
    )
    return result


def test_training_records_one_loss_per_step(trained):
    assert trained.steps == 3 and len(trained.losses) == 3
    assert all(loss > 0 for loss in trained.losses)
    assert 0 < trained.trainable_params < trained.total_params
    assert 0.5 < trained.masked_fraction < 1


def test_adapter_saved_with_the_fixed_stop_contract(trained):
    gen = json.loads((trained.adapter_dir / "generation_config.json").read_text())
    c = trained.contract
    assert c.fixed and c.ok and c.end_of_turn.token == "<|im_end|>"
    assert gen["eos_token_id"][0] == c.end_of_turn.id and c.eos_ids_before == (0,)
    assert (trained.adapter_dir / "adapter_config.json").is_file()
    from transformers import AutoModelForCausalLM

    merged = AutoModelForCausalLM.from_pretrained(trained.merged_dir)
    assert merged.generation_config.eos_token_id[0] == c.end_of_turn.id


def test_run_is_recorded_with_the_loss_curve(trained):
    assert trained.run_id is not None
    rows = [json.loads(line) for line in (trained.run_dir / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in rows if "loss" in r]
    assert losses == pytest.approx(list(trained.losses))
    assert (trained.run_dir / "artifacts" / "adapter_config.json").is_file()


def test_check_stop_on_the_trained_adapter(trained, demo_model_dir):
    held = generate_chat_examples(n=4, seed=77)
    check = check_stopping(
        model_dir=demo_model_dir,
        adapter_dir=trained.adapter_dir,
        examples=held,
        query=StopQuery(n=4, max_new_tokens=6, num_threads=1),
    )
    assert check.n == 4 and check.contract.ok
    for case in check.cases:
        assert 1 <= case.generated_tokens <= 6
    assert check.stop_rate == sum(c.stopped for c in check.cases) / 4
    assert check.passed == (check.stop_rate >= 0.9)


def test_base_model_without_adapter_has_no_contract(demo_model_dir):
    check = check_stopping(
        model_dir=demo_model_dir,
        examples=generate_chat_examples(n=2, seed=1),
        query=StopQuery(n=2, max_new_tokens=4, num_threads=1),
    )
    assert not check.contract.ok  # base generation_config stops on <|endoftext|> only


def test_targets_matching_nothing_list_the_modules(demo_model_dir, tmp_path):
    with pytest.raises(UsageError, match=r"wq_proj.*q_proj"):
        train_lora_sft(
            model_dir=demo_model_dir,
            examples=generate_chat_examples(n=4),
            out_dir=tmp_path,
            settings=SFTSettings(steps=1, targets="wq_proj"),
            record=False,
        )


def test_zero_steps_and_failed_audit_stop_before_training(demo_model_dir, tmp_path):
    with pytest.raises(UsageError, match="steps must be >= 1, not 0"):
        train_lora_sft(
            model_dir=demo_model_dir,
            examples=generate_chat_examples(n=4),
            out_dir=tmp_path,
            settings=SFTSettings(steps=0),
            record=False,
        )
    with pytest.raises(CheckFailed, match="no_trained_token"):
        train_lora_sft(
            model_dir=demo_model_dir,
            examples=generate_chat_examples(n=4),
            out_dir=tmp_path,
            settings=SFTSettings(steps=1, max_length=8),
            record=False,
        )


def test_run_record_is_finished_with_its_config(trained):
    record = json.loads((trained.run_dir / "run.json").read_text())
    assert record["status"] == "finished"
    text = json.dumps(record)
    assert '"lora_r": 4' in text and "lora-sft" in text


def test_a_diverging_run_stops_with_check_failed_and_saves_no_adapter(demo_model_dir, tmp_path):
    """Issue 14: `expkit sft --lr 1e30` reported "loss 3.950 -> 0.000", exit 0, and saved an adapter
    that was NaN in every value."""
    from expkit.runs.store import list_runs, read_record

    settings = SFTSettings(steps=6, batch_size=4, learning_rate=1e30, num_threads=1, lora_r=4)
    with pytest.raises(CheckFailed, match=r"training diverged at step \d+: .*(nan|inf)"):
        train_lora_sft(
            model_dir=demo_model_dir,
            examples=generate_chat_examples(n=24, seed=3),
            out_dir=tmp_path,
            settings=settings,
            store=tmp_path / "runs",
        )
    assert not (tmp_path / "adapter").exists()
    (row,) = list_runs(tmp_path / "runs").runs
    rec = read_record(tmp_path / "runs" / row.id)
    assert rec.status == "failed" and rec.diverged and "no adapter was saved" in rec.error
    assert rec.final_metrics["step"] < 6  # stopped at the first non-finite value


def test_stop_query_refuses_bad_values_naming_the_field():
    with pytest.raises(UsageError, match=r"min_stop_rate must be in \[0, 1\], not 1.5"):
        StopQuery(min_stop_rate=1.5)
    with pytest.raises(UsageError, match="n must be >= 1, not 0"):
        StopQuery(n=0)


def test_training_on_a_file_carries_the_skipped_lines(demo_model_dir, tmp_path):
    from expkit.finetune.chatdata import write_chat_jsonl
    from expkit.finetune.training import train_lora_sft_on_file

    path = write_chat_jsonl(generate_chat_examples(n=4, seed=5), tmp_path / "train.jsonl")
    with path.open("a") as fh:
        fh.write("{not json\n")
    r = train_lora_sft_on_file(
        model_dir=demo_model_dir,
        data_path=path,
        out_dir=tmp_path / "out",
        settings=SFTSettings(steps=1, batch_size=2, num_threads=1, lora_r=2),
        on_error="skip",
        record=False,
    )
    assert r.steps == 1 and list(r.skipped_lines) == [5] and "JSON" in r.skipped_lines[5]
