"""The one checkpoint format (expkit.runs.checkpoint): what a directory holds, tied weights, replacing a
name, refusing a corrupt file with the previous good one named, and the earlier formats read as one clear
error instead of a silent shim."""

from __future__ import annotations

import json

import pytest
import torch

from expkit.errors import InputError, UsageError
from expkit.runs.checkpoint import find_checkpoints, load_checkpoint, read_checkpoint, save_checkpoint


class _Tied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(5, 3)
        self.head = torch.nn.Linear(3, 5, bias=False)
        self.head.weight = self.emb.weight


def test_round_trip_with_tied_weights_and_meta(tmp_path):
    torch.manual_seed(0)
    net = _Tied()
    info = save_checkpoint({"model": net.state_dict(), "step": 7, "note": "x"}, tmp_path, "a", meta={"lr": 0.1})
    assert info.path == tmp_path / "a" and set(info.files) == {"tensors.safetensors", "state.pt"}
    assert json.loads((info.path / "manifest.json").read_text())["format"] == 2
    back = read_checkpoint(info.path)
    assert back.meta == {"lr": 0.1} and back.files == info.files
    state = load_checkpoint(info.path)
    assert state["step"] == 7 and state["note"] == "x"
    other = _Tied()
    other.load_state_dict(state["model"])
    assert torch.equal(other.emb.weight, net.emb.weight) and other.head.weight is other.emb.weight


def test_saving_a_name_again_replaces_it_whole_and_leaves_no_temporary(tmp_path):
    save_checkpoint({"w": torch.ones(2), "step": 1}, tmp_path, "last")
    save_checkpoint({"w": torch.zeros(3)}, tmp_path, "last")
    state = load_checkpoint(tmp_path / "last")
    assert torch.equal(state["w"], torch.zeros(3)) and "step" not in state
    assert [p.name for p in tmp_path.iterdir()] == ["last"] and find_checkpoints(tmp_path) == [tmp_path / "last"]


def test_a_corrupt_file_is_refused_naming_the_previous_good_checkpoint(tmp_path):
    save_checkpoint({"w": torch.ones(4)}, tmp_path, "step-1")
    save_checkpoint({"w": torch.ones(4) * 2}, tmp_path, "step-2")
    f = tmp_path / "step-2" / "tensors.safetensors"
    data = bytearray(f.read_bytes())
    data[-1] ^= 0xFF  # same size, one flipped byte
    f.write_bytes(bytes(data))
    with pytest.raises(InputError, match="does not match its sha256") as exc:
        load_checkpoint(tmp_path / "step-2")
    assert str(tmp_path / "step-1") in exc.value.hint


def test_state_that_weights_only_refuses_is_a_usage_error_at_save(tmp_path):
    with pytest.raises(UsageError, match="weights_only"):
        save_checkpoint({"f": object()}, tmp_path, "bad")
    assert not (tmp_path / "bad").exists() and not any(tmp_path.iterdir())


def test_the_earlier_flat_format_is_named_not_read(tmp_path):
    from safetensors.torch import save_file

    save_file({"model/w": torch.ones(2)}, str(tmp_path / "last.safetensors"))
    torch.save({"step": 3}, tmp_path / "last.pt")
    with pytest.raises(InputError, match=r"last.safetensors and last.pt: a checkpoint of expkit's earlier flat format"):
        load_checkpoint(tmp_path / "last")


def test_the_earlier_training_format_is_named_not_read(tmp_path):
    old = tmp_path / "step-0000004"
    old.mkdir()
    (old / "model.safetensors").write_bytes(b"x")
    (old / "state.pt").write_bytes(b"x")
    (old / "manifest.json").write_text(json.dumps({"format": 1, "files": {}}))
    with pytest.raises(InputError, match=r"earlier training format .*manifest format 1") as exc:
        read_checkpoint(old)
    assert "start a new run" in exc.value.message


@pytest.mark.parametrize("where", [".", "/"])
def test_a_path_without_a_name_is_not_a_checkpoint_error_not_a_traceback(tmp_path, monkeypatch, where):
    # `expkit train charlm --resume .` in a folder without checkpoints was a ValueError traceback (exit 3)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="not a checkpoint"):
        read_checkpoint(where)
