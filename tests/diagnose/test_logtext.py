"""Log cleaning before parsing (timestamps, logger prefixes, glog headers, ranks, ANSI) and output that
never carries terminal control sequences."""

from __future__ import annotations

import pytest

from expkit.diagnose import parse_traceback
from expkit.diagnose.logtext import clean_log_text, sanitize_for_terminal, strip_ansi

TB = [
    "Traceback (most recent call last):",
    '  File "/me/train.py", line 12, in <module>',
    "    main()",
    '  File "/me/train.py", line 9, in main',
    '    raise ValueError("bad batch")',
    "ValueError: bad batch",
]


@pytest.mark.parametrize(
    "prefix",
    [
        "2026-11-30 21:17:37,123 - root - ERROR - ",  # logging's '%(asctime)s - %(name)s - %(levelname)s - '
        "2026-11-30T21:17:37.123456Z ",  # ts / docker logs --timestamps
        "2026-11-30T21:17:37.123456789Z stderr F ",  # Kubernetes CRI
        "[2026-11-30 21:17:37][ERROR] ",
        "ERROR:root:",  # logging.basicConfig
        "11/30/2026 21:17:37 - ERROR - __main__ - ",  # the Hugging Face example scripts
        "[ERROR|trainer.py:2345] 2026-11-30 21:17:37,123 >> ",  # transformers' own logger
        "21:17:37.123 ",
    ],
)
def test_every_line_prefixed_still_parses(prefix):
    tb = parse_traceback(clean_log_text("\n".join(prefix + line for line in TB)).text)
    assert tb.final.type == "ValueError" and tb.final.message == "bad batch"
    assert tb.chosen_frame.line == 9 and tb.chosen_frame.code == 'raise ValueError("bad batch")'


def test_ranks_survive_behind_other_prefixes_and_colours():
    lines = [f"[80746] 2026-11-30 21:17:37 [rank1]: \x1b[31m{line}\x1b[0m" for line in TB]
    clean = clean_log_text("\n".join(lines))
    assert clean.lines_with_escapes == len(TB) and clean.lines_with_prefixes == len(TB)
    tb = parse_traceback(clean.text)
    assert tb.rank == 1 and tb.final.type == "ValueError"


def test_code_and_messages_are_left_alone():
    text = "\n".join(TB) + "\n"
    assert clean_log_text(text).text == text  # nothing looks like a prefix in Python's own lines
    assert clean_log_text("INFO: loss went up").text == "INFO: loss went up"  # not a logger prefix shape


def test_progress_bar_redraws_keep_the_last_state():
    assert clean_log_text("  1%|  | 1/125\r  2%|  | 2/125\r").text == "  2%|  | 2/125"


def test_ansi_and_control_sequences_never_reach_the_terminal():
    nasty = "ok\x1b[2J\x1b]0;pwned\x07 \x1b[31mred\x1b[0m \x08\x9b6n end\x1bc"
    assert strip_ansi("\x1b[1;31mx\x1b[0m") == "x"
    out = sanitize_for_terminal(nasty)
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert out == "ok red \\x08 end"
    assert sanitize_for_terminal("a\n\tb") == "a\n\tb"


def test_trainer_errors_without_a_loss_or_columns_are_explained():
    from expkit.diagnose import diagnose_text

    site = "/venv/lib/python3.11/site-packages"
    text = (
        'Traceback (most recent call last):\n  File "/me/train_hf.py", line 30, in <module>\n    trainer.train()\n'
        f'  File "{site}/transformers/trainer.py", line 1530, in train\n    return inner_training_loop(\n'
        f'  File "{site}/transformers/trainer.py", line 2051, in training_step\n'
        "    loss = self.compute_loss(model, inputs)\n"
        f'  File "{site}/transformers/trainer.py", line 2201, in compute_loss\n    raise ValueError(\n'
        "ValueError: The model did not return a loss from the inputs, only the following keys: logits. For "
        "reference, the inputs it received are input_ids,attention_mask.\n"
    )
    e = diagnose_text(text).explanation
    assert e.kind == "trainer_no_loss" and "input_ids,attention_mask" in e.summary
    assert e.trainer == "train -> training_step -> compute_loss: computing the loss of a batch"
    assert any("DataCollatorForLanguageModeling" in f for f in e.fixes)
    cols = text.replace(
        text.splitlines()[-1],
        "ValueError: No columns in the dataset match the model's forward "
        "method signature: (input_ids, labels). The following columns have been ignored: [text].",
    )
    assert diagnose_text(cols).explanation.kind == "trainer_no_columns"


def test_srun_label_task_numbers_are_ranks():
    # srun --label (-l) puts "N: " before every line of task N; a code line's own indentation is kept
    text = "\n".join([" 0: Epoch 1:  10%|#  | 10/100"] + [f"1: {line}" for line in TB])
    tb = parse_traceback(clean_log_text(text).text)
    assert tb.rank == 1 and tb.final.type == "ValueError" and tb.final.message == "bad batch"
    assert tb.chosen_frame.line == 9 and tb.chosen_frame.code == 'raise ValueError("bad batch")'
    code = clean_log_text('    1: "a",').text
    assert code == '    1: "a",'  # an indented dict entry in source is not a task number


IPYTHON_PLAIN = """\
---------------------------------------------------------------------------
RuntimeError                              Traceback (most recent call last)
Cell In[3], line 5
      3 x = torch.randn(2, 3)
----> 5 y = model(x)

File /opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py:1739, in Module._wrapped_call_impl(self, *args)
   1737     return self._compiled_call_impl(*args, **kwargs)
-> 1739     return self._call_impl(*args, **kwargs)

[... skipping hidden 1 frame]

File ~/proj/model.py:42, in Head.forward(self, x)
     41 def forward(self, x):
---> 42     return self.proj(x)

RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)
"""
# IPython colours each part: the exception type red, locations green, function names cyan, line numbers green
_RED, _GREEN, _CYAN, _OFF = "\x1b[0;31m", "\x1b[0;32m", "\x1b[0;36m", "\x1b[0m"
IPYTHON_TB = (
    IPYTHON_PLAIN.replace("RuntimeError", f"{_RED}RuntimeError{_OFF}")
    .replace("In[3], line 5", f"{_GREEN}In[3], line 5{_OFF}")
    .replace("Head.forward", f"{_CYAN}Head.forward{_OFF}")
    .replace("---> 42", f"{_GREEN}---> 42{_OFF}")
    .replace("----> 5", f"{_GREEN}----> 5{_OFF}")
)


def test_an_ipython_traceback_is_read_as_python_prints_it():
    # IPython 8's verbose traceback (Jupyter, ipython), with its colours: frames as 'Cell In[3], line 5' and
    # 'File path:line, in Qual.name(args)', the failing line after '---->'
    tb = parse_traceback(clean_log_text(IPYTHON_TB).text)
    assert tb.final.type == "RuntimeError" and tb.final.message.startswith("mat1 and mat2 shapes")
    assert [(f.file, f.line, f.function, f.kind) for f in tb.final.frames] == [
        ("<cell In[3]>", 5, "<module>", "yours"),
        ("/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", 1739, "_wrapped_call_impl", "framework"),
        ("~/proj/model.py", 42, "forward", "yours"),
    ]
    assert tb.chosen_frame.file == "~/proj/model.py" and tb.chosen_frame.code == "return self.proj(x)"


@pytest.mark.parametrize(
    "prefix",
    [
        "2026-12-01 10:00:00,123 - root - ERROR - ",  # logging's "%(asctime)s - %(name)s - %(levelname)s - "
        "ERROR:root:",  # logging.basicConfig()
        "[2026-12-01 10:00:00,123][__main__][ERROR] - ",  # Hydra's job logging (issue 21: not recognised)
    ],
)
def test_python_logging_prefixes_are_removed_before_the_traceback_is_read(prefix):
    lines = [
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in <module>',
        "    x = y @ z",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 4x8)",
    ]
    tb = parse_traceback(clean_log_text("\n".join(prefix + x for x in lines)).text)
    assert tb.exceptions[-1].type == "RuntimeError" and tb.chosen_frame is not None
    assert (tb.chosen_frame.file, tb.chosen_frame.line, tb.chosen_frame.code) == ("train.py", 3, "x = y @ z")
