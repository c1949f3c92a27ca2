"""A trial command for the sweep tests (run as a script, copied into each test's directory).

Logs ``{"step", "loss"}`` with loss = 0.5 + 10 * lr + 0.01 * seed at its last step (EXPKIT_CONFIG_LR,
EXPKIT_SEED). Files next to the copy change what it does, so a test can steer a retry or a resume:
``fail-<seed>``: raise (a failing trial); ``selfkill-<seed>``: the first attempt SIGKILLs its own process
(a killed worker), later ones finish; ``slow``: seeds other than 0 sleep 60 s unless ``fast`` exists.
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

here = Path(__file__).parent
seed = int(os.environ["EXPKIT_SEED"])
lr = float(os.environ.get("EXPKIT_CONFIG_LR", "0"))
(here / f"started-{seed}-{lr}-{time.time_ns()}").write_text(str(os.getpid()))
(here / f"argv-{seed}-{lr}").write_text(json.dumps({"argv": sys.argv[1:], "omp": os.environ.get("OMP_NUM_THREADS")}))
if (here / f"fail-{seed}").exists():
    raise RuntimeError(f"trial with seed {seed} fails on purpose")
marker = here / f"selfkill-{seed}"
try:  # unlink claims the marker: of two trials of one seed running at once (configs interleaved by seed), one kills
    marker.unlink()  # itself; exists() then unlink() let both see it and the second die of FileNotFoundError
except FileNotFoundError:
    pass
else:
    os.kill(os.getpid(), signal.SIGKILL)
if (here / "slow").exists() and seed != 0 and not (here / "fast").exists():
    time.sleep(60)
sys.stdout.write(json.dumps({"step": 1, "loss": 1.0 + 10 * lr + 0.01 * seed}) + "\n")
sys.stdout.write(json.dumps({"step": 2, "loss": 0.5 + 10 * lr + 0.01 * seed, "acc": 0.5 + lr}) + "\n")
