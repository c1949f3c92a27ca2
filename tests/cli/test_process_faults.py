"""Faults only a real process sees (issue 21's hostile run): a file-size limit during a write, a reader that
closes the pipe. Each case runs ``expkit`` as a subprocess, not through CliRunner."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

EXPKIT = [sys.executable, "-m", "expkit"]


def _limit_file_size(max_bytes: int):  # noqa: ANN202 - a preexec_fn
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return apply


def _many_records(tmp_path: Path) -> Path:
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": "x" * 50}) + "\n" for i in range(5000)))
    return path


def test_a_file_size_limit_during_output_is_one_line_exit_2(tmp_path: Path) -> None:
    # `ulimit -f`: Python ignores SIGXFSZ, so the write raises EFBIG without a filename; it was a traceback, exit 3
    data = _many_records(tmp_path)
    for extra in ([], ["--json"]):
        with open(tmp_path / "out.txt", "wb") as out:
            res = subprocess.run(
                [*EXPKIT, "data", "head", str(data), "-n", "5000", *extra],
                stdout=out,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=_limit_file_size(16 * 1024),
                timeout=120,
            )
        assert res.returncode == 2, res.stderr[-2000:]
        assert "Traceback" not in res.stderr
        assert "could not write the output: File too large" in res.stderr and "ulimit -f" in res.stderr


def test_a_closed_pipe_under_a_rich_table_is_141(tmp_path: Path) -> None:
    # rich's own broken-pipe handler exited 1; `expkit labs list | head -1` is not a failure
    proc = subprocess.Popen([*EXPKIT, "labs", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before the first write
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err[-2000:]
    assert "Traceback" not in err


def test_escape_sequences_from_data_never_reach_the_terminal(tmp_path: Path) -> None:
    # a key and a value carrying an OSC title change and a clear-screen; a path with a bell (issue 21: echoed)
    data = tmp_path / "esc.jsonl"
    data.write_text(json.dumps({"a\x1b]0;pwned\x07key": 1, "model": "x\x1b[2Jy"}) + "\n")
    for args in (
        ["data", "stats", str(data)],
        ["data", "head", str(data)],
        ["data", "stats", str(tmp_path / "n\x1b[31m\x07.jsonl")],
    ):
        res = subprocess.run([*EXPKIT, *args], capture_output=True, timeout=120)
        assert b"\x1b" not in res.stdout and b"\x07" not in res.stdout, args
        assert b"\x1b" not in res.stderr and b"\x07" not in res.stderr, args
        assert b"Traceback" not in res.stderr
    shown = subprocess.run([*EXPKIT, "data", "stats", str(data)], capture_output=True, timeout=120).stdout
    assert b"akey" in shown  # the key is shown, its escape removed


def _one_line_exit_2(args: list[str], *, timeout: float = 120) -> str:
    """Run expkit with ``args``; it must end (within ``timeout``) with exit 2 and one error line, no traceback."""
    res = subprocess.run([*EXPKIT, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr and "MemoryError" not in res.stderr
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr[-2000:]
    return lines[0]


def test_inputs_that_never_end_stop_with_one_line(tmp_path: Path) -> None:
    # /dev/zero has no line end: the line bound (data.sources.MAX_LINE_BYTES) stops it; `why` reads whole texts,
    # stopped by MAX_TEXT_BYTES; a MemoryError traceback before
    for args in (["data", "stats", "/dev/zero"], ["data", "head", "/dev/zero"], ["data", "validate", "/dev/zero"]):
        assert "longer than 256 MiB without a line end" in _one_line_exit_2(args)
    assert "more than 512 MiB of text" in _one_line_exit_2(["why", "/dev/zero"])


def test_a_gzip_bomb_stops_at_the_line_bound(tmp_path: Path) -> None:
    import zlib

    bomb = tmp_path / "bomb.jsonl.gz"
    co = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
    with open(bomb, "wb") as f:
        chunk = b"\0" * (1 << 20)
        for _ in range(300):  # 300 MiB of zeros, ~300 KiB on disk
            f.write(co.compress(chunk))
        f.write(co.flush())
    assert bomb.stat().st_size < 2 << 20
    assert "line 1 is longer than 256 MiB" in _one_line_exit_2(["data", "stats", str(bomb)])


def test_a_zip_bomb_inside_an_eval_is_refused(tmp_path: Path) -> None:
    # a sample member that claims 3 GiB: refused before a byte is inflated (inspect_logs.MAX_MEMBER_BYTES);
    # the member that inflates past the bound whatever its header says is tested in tests/integrations/test_inspect.py
    import struct
    import zipfile

    sample = {"id": 1, "epoch": 1, "scores": {"match": {"value": "C"}}}
    header = {"status": "success", "eval": {"task": "qa", "model": "m/a"}}
    logs = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.eval"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("header.json", json.dumps(header | {"eval": {"task": "qa", "model": f"m/{name}"}}))
            zf.writestr("samples/1_epoch_1.json", json.dumps(sample))
        logs.append(path)
    buf = bytearray(logs[1].read_bytes())
    at = buf.find(b"PK\x01\x02")
    while at != -1:  # the central directory's uncompressed size of the sample member -> 3 GiB
        n = struct.unpack_from("<H", buf, at + 28)[0]
        if bytes(buf[at + 46 : at + 46 + n]) == b"samples/1_epoch_1.json":
            struct.pack_into("<I", buf, at + 24, 3 * 2**30)
        at = buf.find(b"PK\x01\x02", at + 4)
    logs[1].write_bytes(bytes(buf))
    line = _one_line_exit_2(["stats", "table", "--from", "inspect", *map(str, logs)])
    assert "samples/1_epoch_1.json inflates to more than 1 GiB" in line and "b.eval" in line


def test_runs_exec_with_a_device_or_fifo_as_data_does_not_hang(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for data in ("/dev/zero", str(fifo)):
        res = subprocess.run(
            [*EXPKIT, "runs", "exec", "--store", str(tmp_path / "store"), "--data", data, "--json", "--", "true"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        run_dir = Path(json.loads(res.stdout)["result"]["run_dir"])
        record = json.loads((run_dir / "run.json").read_text())
        (fp,) = record["data"]
        assert fp["hash"] is None and "not a regular file" in fp["reason"]


def test_runs_exec_keeps_draining_when_output_log_cannot_be_written(tmp_path: Path) -> None:
    # `ulimit -f 64k`: output.log (and our own stderr, a file here) refuse writes past 64 KiB; the copying
    # thread died, the child blocked on a full pipe and the run stayed `running` forever
    script = "for i in range(20000): print('x' * 100, i)\nprint('{\"step\": 5, \"loss\": 1.0}')\n"
    with open(tmp_path / "err.txt", "wb") as err:
        res = subprocess.run(
            [*EXPKIT, "runs", "exec", "--store", str(tmp_path / "store"), "--json", "--", sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=err,
            preexec_fn=_limit_file_size(64 * 1024),
            timeout=120,
        )
    assert res.returncode == 0
    run_dir = Path(json.loads(res.stdout)["result"]["run_dir"])
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["exit_code"] == 0
    assert record["status_reason"] == "could not write output.log (File too large): the rest of it was lost"
    assert record["final_metrics"] == {"step": 5, "loss": 1.0}  # metrics.jsonl went on being written
    assert (run_dir / "output.log").stat().st_size == 64 * 1024


def test_ctrl_c_during_sft_data_leaves_nothing_under_the_final_name(tmp_path: Path) -> None:
    # the records went straight to the final name: 999 complete lines passed `data validate` as a finished file
    import signal
    import time

    out = tmp_path / "train.jsonl"
    proc = subprocess.Popen(
        [*EXPKIT, "sft", "data", "--out", str(out), "-n", "300000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    part: list[Path] = []
    while time.monotonic() < deadline and proc.poll() is None:
        part = [p for p in tmp_path.glob(".train.jsonl.*.part") if p.stat().st_size > 0]
        if part:
            break
        time.sleep(0.05)
    assert part, "the writer never started a temporary file"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()[-2000:]
    assert not out.exists() and not list(tmp_path.glob(".train.jsonl.*"))


def test_profile_out_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    # torch's (kineto's) trace writer drops write errors: a cut trace read as "no torch op was recorded", exit 0
    import pytest

    pytest.importorskip("torch")
    res = subprocess.run(
        [
            *EXPKIT,
            "profile",
            "--out",
            str(tmp_path / "t.json"),
            "--",
            "python",
            "-c",
            "import torch; torch.ones(64, 64) @ torch.ones(64, 64)",
        ],
        capture_output=True,
        text=True,
        preexec_fn=_limit_file_size(4096),
        timeout=300,
    )
    assert res.returncode == 2, res.stdout[-1000:] + res.stderr[-2000:]
    assert "no torch op was recorded" not in res.stdout + res.stderr
    assert f"{tmp_path / 't.json'}: cannot write the trace: File too large" in res.stderr


def test_labs_in_the_light_install_mark_what_needs_torch(tmp_path: Path) -> None:
    # a sitecustomize makes `import torch` fail as in `pip install expkit` (no second venv): the torch lab is
    # `needs expkit[torch]`, the stats lab runs; 31 of 36 labs were raw tracebacks in the core install
    import os

    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class _NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _NoTorch())\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    out = tmp_path / "report"
    res = subprocess.run(
        [*EXPKIT, "labs", "run", "C2.1", "C2.2", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Traceback" not in res.stdout + res.stderr
    assert "C2.1     not run: needs expkit[torch] (No module named 'torch')" in res.stdout
    results = {r["id"]: r for r in json.loads((out / "results.json").read_text())["results"]}
    assert results["C2.1"]["status"] == "needs" and not results["C2.1"]["measurements"]
    assert results["C2.2"]["status"] == "ok" and results["C2.2"]["measurements"]
