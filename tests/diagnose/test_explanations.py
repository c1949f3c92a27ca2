"""explain() on real PyTorch errors raised here, and on CUDA messages recorded in PyTorch's own format."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from expkit.diagnose import detect_phase, explain, explain_exception, format_report, parse_oom_message
from expkit.diagnose.oom import PhaseGuess
from expkit.diagnose.tracebacks import Frame

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

SITE = "/venv/lib/python3.11/site-packages"


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 20)
        self.fc2 = nn.Linear(30, 5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = _Block()

    def forward(self, x):
        return self.block(x)


def _raised(fn) -> BaseException:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test wants the exception object
        return exc
    raise AssertionError("expected an exception")


def test_matmul_mismatch_in_nested_modules_names_shapes_module_and_user_frame():
    d = explain_exception(_raised(lambda: _Net()(torch.randn(4, 10))))
    tb, e = d.traceback, d.explanation
    assert e.kind == "shape_mismatch"
    assert e.shapes == ((4, 20), (30, 5))  # fc1 gives 20 features, fc2 wants 30
    assert e.module == "self.fc2 -> nn.Linear"
    assert tb.chosen_frame.function == "forward" and "self.fc2" in tb.chosen_frame.code
    kinds = {f.kind for f in tb.final.frames}
    assert kinds == {"yours", "framework"}
    report = format_report(tb, e)
    assert ">> " + __file__ in report and "framework frames (torch/nn/modules/module.py" in report


@pytest.mark.parametrize(
    "fn,kind,field,value",
    [
        (
            lambda: torch.randn(2, 3) @ torch.randn(3, 2, dtype=torch.float64),
            "dtype_mismatch",
            "dtypes",
            ("float", "double"),
        ),
        (lambda: torch.randn(3, 4).view(5, 2), "shape_mismatch", "shapes", ((5, 2), (12,))),
        (lambda: torch.randn(3, 4) + torch.randn(3, 5), "shape_mismatch", "shapes", ((4,), (5,))),
        (
            lambda: nn.CrossEntropyLoss()(torch.randn(4, 7), torch.zeros(3, dtype=torch.long)),
            "shape_mismatch",
            "shapes",
            ((4,), (3,)),
        ),
        (lambda: nn.Embedding(5, 3)(torch.tensor([7])), "index_out_of_range", "kind", "index_out_of_range"),
        (lambda: nn.Embedding(5, 3)(torch.tensor([1.0])), "dtype_mismatch", "kind", "dtype_mismatch"),
    ],
)
def test_real_errors_are_recognized(fn, kind, field, value):
    d = explain_exception(_raised(fn))
    _, e = d.traceback, d.explanation
    assert e.kind == kind, e.message
    assert getattr(e, field) == value


def test_no_grad_and_inplace_from_real_autograd_errors():
    d = explain_exception(_raised(lambda: torch.randn(2, 3).sum().backward()))
    _, e = d.traceback, d.explanation
    assert e.kind == "no_grad"

    def inplace():
        x = torch.randn(3, 4, requires_grad=True)
        y = x * 2
        z = y * y  # saves y for backward
        y.add_(1)
        z.sum().backward()

    d = explain_exception(_raised(inplace))
    _, e = d.traceback, d.explanation
    assert e.kind == "inplace_modified" and e.shapes == ((3, 4),)
    assert "version 0 -> 1" in e.summary


def test_dataloader_with_a_lambda_under_spawn_is_a_pickling_error():
    from torch.utils.data import DataLoader

    loader = DataLoader(list(range(4)), num_workers=1, collate_fn=lambda b: b, multiprocessing_context="spawn")
    with pytest.warns(UserWarning):
        exc = _raised(lambda: list(loader))
    d = explain_exception(exc)
    tb, e = d.traceback, d.explanation
    assert e.kind == "worker_pickling" and "DataLoader" in e.title and "<lambda>" in e.title
    assert any("module top level" in f for f in e.fixes)
    assert {f.kind for f in tb.final.frames} == {"yours", "framework", "stdlib"}


class _Boom(torch.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return torch.randn(3, 4) @ torch.randn(5, 6)


def test_dataloader_worker_traceback_is_parsed_and_its_frame_chosen():
    from torch.utils.data import DataLoader

    exc = _raised(lambda: list(DataLoader(_Boom(), num_workers=1, multiprocessing_context="fork")))
    d = explain_exception(exc)
    tb, e = d.traceback, d.explanation
    assert [r.link for r in tb.exceptions][-1] == "worker"
    assert tb.exceptions[-1].message.startswith("Caught RuntimeError in DataLoader worker process 0")
    assert tb.chosen_frame.function == "__getitem__"  # inside the worker, not the `for batch` line
    assert e.kind == "shape_mismatch" and e.shapes == ((3, 4), (5, 6))


# Recorded in the format of c10/cuda/CUDACachingAllocator.cpp (torch >= 2.2); the numbers are an
# 80 GB card's, as a user pasted them.
OOM_NEW = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.22 GiB. GPU 0 has a total capacity of "
    "79.15 GiB of which 959.44 MiB is free. Including non-PyTorch memory, this process has 78.20 GiB memory in "
    "use. Of the allocated memory 70.01 GiB is allocated by PyTorch, and 7.50 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)
# torch < 2.2 format
OOM_OLD = (
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 15.78 GiB total capacity; 12.34 GiB "
    "already allocated; 1.23 GiB free; 13.45 GiB reserved in total by PyTorch) If reserved memory is >> "
    "allocated memory try setting max_split_size_mb to avoid fragmentation."
)

GiB, MiB = 2**30, 2**20


def _tb(frames: str, last: str) -> str:
    return "Traceback (most recent call last):\n" + textwrap.dedent(frames) + last + "\n"


def test_oom_new_format_numbers_and_backward_phase():
    text = _tb(
        f'''\
      File "/me/train.py", line 88, in <module>
        loss.backward()
      File "{SITE}/torch/_tensor.py", line 625, in backward
        torch.autograd.backward(
      File "{SITE}/torch/autograd/graph.py", line 841, in _engine_run_backward
        return Variable._execution_engine.run_backward(
    ''',
        OOM_NEW,
    )
    e = explain(text)
    o = e.oom
    assert e.kind == "out_of_memory" and o.phase == "backward"
    assert (o.device, o.requested_bytes) == ("cuda:0", round(1.22 * GiB))
    assert o.capacity_bytes == round(79.15 * GiB) and o.free_bytes == round(959.44 * MiB)
    assert o.allocated_bytes == round(70.01 * GiB)
    assert o.reserved_bytes == round(70.01 * GiB) + round(7.50 * GiB)  # allocated + cached
    assert o.process_in_use_bytes == round(78.20 * GiB)
    assert any("expandable_segments" in f for f in e.fixes)  # 7.5 GiB cached >= the 1.22 GiB asked


def test_oom_old_format():
    o = parse_oom_message(OOM_OLD.split(": ", 1)[1])
    assert (o.device, o.requested_bytes, o.capacity_bytes) == ("cuda:1", 2 * GiB, round(15.78 * GiB))
    assert (o.allocated_bytes, o.free_bytes, o.reserved_bytes) == (
        round(12.34 * GiB),
        round(1.23 * GiB),
        round(13.45 * GiB),
    )
    assert parse_oom_message("mat1 and mat2 shapes cannot be multiplied") is None


@pytest.mark.parametrize(
    "frame,phase",
    [
        (Frame("/me/t.py", 5, "<module>", 'model = AutoModelForCausalLM.from_pretrained("x")', "yours"), "loading"),
        (Frame(f"{SITE}/transformers/modeling_utils.py", 5, "_load_pretrained_model", None, "framework"), "loading"),
        (Frame(f"{SITE}/torch/nn/modules/module.py", 5, "_call_impl", None, "framework"), "forward"),
        (Frame(f"{SITE}/torch/optim/adamw.py", 5, "_multi_tensor_adamw", None, "framework"), "optimizer step"),
        (Frame("/me/t.py", 9, "train", "optimizer.step()", "yours"), "optimizer step"),
        (Frame(f"{SITE}/transformers/generation/utils.py", 5, "_sample", None, "framework"), "generate"),
        (Frame(f"{SITE}/torch/nn/modules/module.py", 5, "_apply", None, "framework"), "loading"),
    ],
)
def test_detect_phase(frame, phase):
    assert detect_phase([frame]).phase == phase


def test_generate_wins_over_the_forward_it_calls():
    frames = [
        Frame("/me/t.py", 3, "<module>", "out = model.generate(**batch)", "yours"),
        Frame(f"{SITE}/torch/nn/modules/module.py", 5, "_call_impl", None, "framework"),
    ]
    assert detect_phase(frames) == PhaseGuess("generate", "/me/t.py:3 out = model.generate(**batch)")
    assert detect_phase([]).phase is None


def test_device_messages_recorded_from_cuda_runs():
    # torch 2.x wording when an input stays on the CPU
    e = explain(
        _tb(
            '  File "/me/t.py", line 3, in <module>\n    model(x)\n',
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu!",
        )
    )
    assert e.kind == "device_mismatch" and e.devices == ("cuda:0", "cpu")
    e = explain(
        _tb(
            '  File "/me/t.py", line 3, in <module>\n    conv(x)\n',
            "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
        )
    )
    assert e.kind == "device_mismatch" and e.devices == ("cuda", "cpu")
    # torch 2.13 on CPU, recorded from torch.randn(2, 3).to("meta") + torch.randn(2, 3) (the meta device
    # loads torch's decompositions, ~5 s, so the text is recorded rather than raised here)
    e = explain(
        _tb(
            '  File "/me/t.py", line 3, in <module>\n    y = x + b\n',
            "RuntimeError: Tensor on device cpu is not on the expected device meta!",
        )
    )
    assert e.kind == "device_mismatch" and e.devices == ("cpu", "meta")


def test_unknown_error_points_at_the_frame():
    e = explain(_tb('  File "/me/t.py", line 3, in <module>\n    f()\n', "KeyError: 'labels'"))
    assert e.kind == "unknown" and "/me/t.py:3" in e.summary


def test_install_prints_traceback_then_report(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(
        "import expkit.diagnose\nexpkit.diagnose.install()\ndef load(cfg):\n    return cfg['lr']\nload({})\n"
    )
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    assert res.stderr.index("Traceback (most recent call last)") < res.stderr.index("--- expkit why ---")
    assert f"Look here: {script}:4 in load  (return cfg['lr'])" in res.stderr
    assert "What happened: KeyError" in res.stderr


def test_cat_size_mismatch_from_a_real_torch_cat():
    d = explain_exception(_raised(lambda: torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)])))
    _, ex = d.traceback, d.explanation
    assert ex.kind == "cat_size_mismatch"
    assert ex.title == "torch.cat along dim 0: tensor 1 is 4 where 3 was expected"
    assert any("pad_sequence" in f for f in ex.fixes)
