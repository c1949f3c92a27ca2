# expkit: `make demo` runs every lab and writes report/index.html; `make test` runs the test suite.
# Both create .venv and install what they need when it is missing.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU wheel of torch that lies on this machine's disk. Any other spec (or a bare range) pulls
# a multi-GB CUDA build here. A GPU user keeps their own torch: it is only installed when
# `import torch` fails inside the venv (see README, "Using the torch you already have").
TORCH_SPEC ?= torch==2.13.0
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
# `make test` runs `make lint` (ruff check, ruff format --check, mypy on src/) before pytest;
# `make test LINT=0` skips it for a quick local loop (CI never sets it). Plain `=`, not `?=`: GNU make
# predefines LINT (= lint, for C's lint), so `?=` would keep that and never lint.
LINT = 1

.PHONY: demo test lint venv venv-dev browser slurm clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch first (only when absent), then the project; re-run when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(PY)
	@$(PY) -c "import torch" 2>/dev/null || { echo "installing $(TORCH_SPEC) (CPU wheel)"; $(PIP) "$(TORCH_SPEC)"; }
	$(PIP) -e ".[all]"
	@touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PIP) -e ".[dev]"
	@touch $@

venv: $(VENV)/.installed
venv-dev: $(VENV)/.installed-dev

# A real browser renders the report in the tests. Debian's chromium is installed when missing
# and we are root (CI is); otherwise the browser tests say they were skipped and why.
browser:
	@{ command -v chromium && command -v chromedriver; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian chromium for the report's browser test"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	      || echo "warning: chromium could not be installed; browser tests will be skipped"; \
	  else echo "note: no chromium and not root; browser tests will be skipped"; fi; }

# The Slurm backend is tested on a real one-node Slurm that tests/sweep/test_slurm.py starts and stops
# (munged, slurmctld, slurmd in a temporary directory). Debian's packages (3.5 MB to download, no recommends) are
# installed when missing and we are root (CI is); otherwise those tests say they were skipped and why.
slurm:
	@{ command -v slurmctld && command -v slurmd && command -v munged && command -v sbatch; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian slurmctld, slurmd and munge for the Slurm backend's test"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      slurmctld slurmd slurm-client munge >/dev/null) \
	      || echo "warning: Slurm could not be installed; the Slurm backend's tests will be skipped"; \
	  else echo "note: no Slurm and not root; the Slurm backend's tests will be skipped"; fi; }

demo: venv
	$(VENV)/bin/expkit labs run --out report
	@echo "report: $(CURDIR)/report/index.html"

# The configuration (rules, each exception with its reason) is in pyproject.toml: [tool.ruff], [tool.mypy].
lint: venv-dev
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

test: venv-dev browser slurm
	@if [ "$(LINT)" = 1 ]; then $(MAKE) --no-print-directory lint; fi
	$(PY) -m pytest -n 2 --dist loadfile  # two workers: serial took 1,087 s on 2 idle cores (docs/development.md)

clean:
	rm -rf report .pytest_cache .mypy_cache .ruff_cache
