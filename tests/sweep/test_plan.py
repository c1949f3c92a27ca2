"""The sweep plan: grid x seeds, how a trial's config reaches the command, the plan file."""

from __future__ import annotations

import pytest

from expkit.errors import UsageError
from expkit.runs.store import validate_name
from expkit.sweep.plan import SweepPlan, parse_grid, plan_sweep, read_plan, write_plan


def test_grid_times_seeds_in_a_stable_order():
    plan = plan_sweep(["python", "t.py"], group="g", grid=["lr=0.001,0.003", "bs=8,16"], seeds=2)
    labels = [t.label for t in plan.trials]
    assert len(labels) == 2 * 2 * 2
    assert labels[:3] == ["lr=0.001 bs=8 seed=0", "lr=0.001 bs=8 seed=1", "lr=0.001 bs=16 seed=0"]
    assert [t.index for t in plan.trials] == list(range(8))
    # the run names are valid store names and unique: resume finds trials by them
    names = [t.run_name("g") for t in plan.trials]
    assert len(set(names)) == 8 and all(validate_name(n) for n in names)


def test_config_goes_as_arguments_and_environment_as_written():
    plan = plan_sweep(["expkit", "train", "charlm"], group="g", grid=["lr=1e-3", "n_layer=2"], seeds=[5])
    (trial,) = plan.trials
    assert trial.seed == 5
    assert plan.command_of(trial) == ["expkit", "train", "charlm", "--config", "lr=1e-3", "--config", "n_layer=2"]
    assert plan.env_of(trial) == {"EXPKIT_CONFIG_LR": "1e-3", "EXPKIT_CONFIG_N_LAYER": "2"}
    assert trial.config == {"lr": 0.001, "n_layer": 2}  # typed in the record, as written on the command line
    no_args = plan_sweep(["python", "t.py"], group="g", grid=["lr=1e-3"], config_args=False)
    assert no_args.command_of(no_args.trials[0]) == ["python", "t.py"]


def test_no_grid_is_one_config():
    plan = plan_sweep(["python", "t.py"], group="g", seeds=3)
    assert [t.label for t in plan.trials] == ["seed=0", "seed=1", "seed=2"]


@pytest.mark.parametrize(
    ("items", "match"),
    [
        (["lr"], "not KEY=V1,V2"),
        (["lr=0.1,,0.2"], "empty value"),
        (["lr=0.1,0.1"], "repeats a value"),
        (["lr=0.1", "lr=0.2"], "given twice"),
        (["1lr=0.1"], "not KEY=V1,V2"),
    ],
)
def test_bad_grid_items_are_named(items, match):
    with pytest.raises(UsageError, match=match):
        parse_grid(items)


def test_bad_plans_are_refused():
    with pytest.raises(UsageError, match="no command"):
        plan_sweep([], group="g")
    with pytest.raises(UsageError, match="between 1 and"):
        plan_sweep(["x"], group="g", seeds=0)
    with pytest.raises(UsageError, match="between 1 and"):  # was an OverflowError from range() (fuzz H6)
        plan_sweep(["x"], group="g", seeds=10**30)
    with pytest.raises(UsageError, match="trials"):
        plan_sweep(["x"], group="g", grid=["a=" + ",".join(map(str, range(1000)))], seeds=1000)
    with pytest.raises(UsageError, match=r"outside 0\.\.2"):
        plan_sweep(["x"], group="g", seeds=[-5])
    with pytest.raises(UsageError, match=r"outside 0\.\.2"):
        plan_sweep(["x"], group="g", seeds=[10**30])
    with pytest.raises(UsageError, match="not allowed"):
        plan_sweep(["x"], group="../up")


def test_plan_file_round_trips(tmp_path):
    plan = plan_sweep(["python", "t.py", "--x"], group="g", grid=["lr=0.1,0.2"], seeds=[3, 4], config_args=False)
    path = write_plan(tmp_path, plan)
    assert path == tmp_path / "groups" / "g.sweep.json"
    assert read_plan(tmp_path, "g") == plan
    assert SweepPlan.from_json(plan.to_json()) == plan
    with pytest.raises(UsageError, match="no sweep 'other'"):
        read_plan(tmp_path, "other")


def test_placeholders_are_filled_per_trial_and_replace_the_config_arguments():
    p = plan_sweep(
        ["python", "t.py", "--lr", "{lr}", "--seed={seed}", "--fmt", "{{lr}}"],
        group="g",
        grid=["lr=0.1,0.2"],
        seeds=2,
    )
    assert p.placeholders == ("lr", "seed")
    t = p.trials[3]  # lr 0.2, seed 1
    # {{lr}} in an argument without a placeholder stays as it is
    assert p.command_of(t) == ["python", "t.py", "--lr", "0.2", "--seed=1", "--fmt", "{{lr}}"]
    assert p.seed_passing == "placeholder {seed} and EXPKIT_SEED"
    assert p.env_of(t) == {"EXPKIT_CONFIG_LR": "0.2"}  # the environment still carries it


def test_doubled_braces_are_literal_beside_a_placeholder():
    from expkit.sweep.plan import fill_placeholders

    assert fill_placeholders("{{x}}={lr}", {"lr": "0.1"}) == "{x}=0.1"
    assert fill_placeholders("print({'a': 1})", {"lr": "0.1"}) == "print({'a': 1})"


def test_a_command_without_placeholders_gets_config_arguments():
    p = plan_sweep(["python", "t.py"], group="g", grid=["lr=0.1"], seeds=1)
    assert p.placeholders == () and p.seed_passing == "EXPKIT_SEED"
    assert p.command_of(p.trials[0]) == ["python", "t.py", "--config", "lr=0.1"]


def test_a_placeholder_naming_no_grid_key_is_refused_with_the_close_name():
    """Issue 34 item 6: ``{lrr}`` used to reach the script as the text ``{lrr}``."""
    with pytest.raises(
        UsageError, match=r"placeholder \{lrr\} in argument '\{lrr\}' names no grid key \(did you mean \{lr\}\?\)"
    ):
        plan_sweep(["python", "t.py", "--lr", "{lrr}"], group="g", grid=["lr=0.1,0.2"], seeds=2)
    # a literal brace is still possible
    plan_sweep(["python", "t.py", "--lr", "{lr}", "{{lrr}}"], group="g", grid=["lr=0.1,0.2"], seeds=2)


def test_trials_start_round_robin_by_seed_in_a_recorded_shuffle_of_the_configs():
    """Issue 34 item 5: trials started in the order the grid was written, a config's seeds in a row."""
    p = plan_sweep(["t"], group="g", grid=["lr=1,2,3,4,5,6"], seeds=3, order_seed=7)
    order = p.start_order()
    assert sorted(t.index for t in order) == list(range(18))
    assert [t.seed for t in order] == [0] * 6 + [1] * 6 + [2] * 6  # every config's first seed first
    configs = [t.config["lr"] for t in order[:6]]
    assert configs != [1, 2, 3, 4, 5, 6] and [t.config["lr"] for t in order[6:12]] == configs
    again = SweepPlan.from_json(p.to_json())
    assert again.order_seed == 7 and again.start_order() == order  # the plan file keeps the order
    assert plan_sweep(["t"], group="g", grid=["lr=1,2,3,4,5,6"], seeds=3, order_seed=8).start_order() != order
