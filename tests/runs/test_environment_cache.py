"""The package list of the environment record is read once per process while sys.path is unchanged
(expkit sweep records many trials from one process), and read again when a package directory changes; the
whole environment record is made once while the packages and the numerics variables are unchanged."""

from __future__ import annotations

import sys

from expkit.runs import environment


def test_package_list_is_cached_until_a_path_directory_changes(tmp_path, monkeypatch):
    calls = []
    real = environment.metadata.distributions

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(environment.metadata, "distributions", counting)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    environment._PACKAGES_CACHE.clear()
    first = environment.capture_environment().packages
    second = environment.capture_environment().packages
    assert len(calls) == 1 and first == second and "numpy" in first
    (tmp_path / "newpkg-1.0.dist-info").mkdir()  # what pip install does to a site-packages directory
    environment.capture_environment()
    assert len(calls) == 2


def test_a_dist_info_without_metadata_is_skipped_not_a_crash(monkeypatch):
    """importlib_metadata >= 8 (pulled in by mlflow/opentelemetry) raises MetadataNotFound for an empty
    ``*.dist-info`` where the stdlib returns None; CI met exactly this after the test above."""

    class HalfInstalled:
        version = "1.0"

        @property
        def metadata(self):
            raise LookupError("No package metadata was found.")

    real = environment.metadata.distributions
    monkeypatch.setattr(environment.metadata, "distributions", lambda: [HalfInstalled(), *real()])
    environment._PACKAGES_CACHE.clear()
    environment._ENVIRONMENT_CACHE.clear()
    packages = environment.capture_environment().packages
    assert "numpy" in packages


def test_the_environment_record_is_made_once_while_nothing_it_records_changed(monkeypatch):
    """A sweep's trials share one environment record (made once per process); a numerics variable that
    changes (OMP_NUM_THREADS here) gives a new record that says so."""
    if "torch" in sys.modules:  # with torch imported the record is read afresh every time (its flags move)
        monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    environment._ENVIRONMENT_CACHE.clear()
    first = environment.capture_environment()
    assert environment.capture_environment() is first and "OMP_NUM_THREADS" not in first.env_vars
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    changed = environment.capture_environment()
    assert changed is not first and changed.env_vars["OMP_NUM_THREADS"] == "3"
    assert changed.packages == first.packages


def test_hardware_record_is_described_once_per_sweep_window(monkeypatch):
    calls = []
    real = environment.describe_machine

    def counting(**kw):
        calls.append(kw)
        return real(**kw)

    monkeypatch.setattr(environment, "describe_machine", counting)
    monkeypatch.setattr(environment, "_HARDWARE_CACHE", {})
    first = environment.capture_hardware()
    assert environment.capture_hardware() is first and len(calls) == 1
    # past the window the machine is described again (a GPU may have been added or taken)
    clock = environment.time.monotonic() + environment.HARDWARE_CACHE_S + 1
    monkeypatch.setattr(environment.time, "monotonic", lambda: clock)
    environment.capture_hardware()
    assert len(calls) == 2
