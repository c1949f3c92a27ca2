"""Library errors name fields (``watch_steps``, ``device``, ``trace_path``); the commands name their flags."""

from __future__ import annotations

import pytest

from expkit.cli.flags import fields_as_flags
from expkit.errors import UsageError


def test_a_known_field_becomes_its_flag_and_others_pass_through():
    with pytest.raises(UsageError) as exc, fields_as_flags({"watch_steps": "--steps"}):
        raise UsageError("watch_steps 0 is not a positive number of steps", hint="e.g. 2")
    assert exc.value.message == "--steps 0 is not a positive number of steps" and exc.value.hint == "e.g. 2"
    with pytest.raises(UsageError, match=r"^watch_stepsx 0"), fields_as_flags({"watch_steps": "--steps"}):
        raise UsageError("watch_stepsx 0 is odd")


def test_library_messages_name_the_field():
    from expkit.doctor.runner import DoctorRequest, run_doctor
    from expkit.labs.runner import check_lab_device

    with pytest.raises(UsageError, match=r"^watch_steps 0 is not a positive number of steps"):
        run_doctor(DoctorRequest(command=("python", "-c", "pass"), watch_steps=0))
    with pytest.raises(UsageError, match=r"^device 'tpu' is not one of"):
        check_lab_device("tpu")


def test_the_commands_name_the_flags(cli, tmp_path):
    res = cli("doctor", "--steps", "0", "--", "python", "-c", "pass")
    assert res.exit_code == 2 and "--steps 0 is not a positive number of steps" in res.stderr
    res = cli("labs", "run", "C2.2", "--device", "tpu", "--out", str(tmp_path / "rep"))
    assert res.exit_code == 2 and "--device 'tpu' is not one of" in res.stderr
