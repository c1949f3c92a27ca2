"""Lab C1.4: read a traceback bottom-up, skip ``_call_impl``, stop at the last frame in your own file.
A real PyTorch shape error is raised inside nested ``nn.Module`` calls and ``expkit why`` reads it."""

from __future__ import annotations

import tempfile
import traceback
from pathlib import Path

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_RULE = SeedFigure(
    "user_frame", "the place to look", None, "", "read bottom-up, skip _call_impl, find the last frame in your own file"
)

# A user's model: the bug is the in_features of Head.proj (64 where the encoder gives 48).
USER_SCRIPT = """\
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 48))

    def forward(self, x):
        return self.layers(x)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 10)

    def forward(self, h):
        return self.proj(h)  # <- the place to look


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = Head()

    def forward(self, x):
        return self.head(self.encoder(x))


def train_step(model, batch):
    logits = model(batch)
    return logits.sum()


train_step(Classifier(), torch.randn(8, 32))
"""


def _draw_frames(ctx: LabContext, groups, chosen) -> Path:
    """The traceback as expkit why shows it: one row per frame of yours, one grey row per collapsed run,
    the chosen frame in red."""
    from expkit.render.figures import new_figure, save_figure

    rows = []
    for g in groups:
        if g.collapsed:
            files = sorted({Path(f.file).name for f in g.frames})
            rows.append((f"... {len(g.frames)} framework/stdlib frames ({', '.join(files)})", "0.55", "normal"))
        else:
            f = g.frames[0]
            mark = f is chosen
            rows.append(
                (
                    f"{'>> ' if mark else '   '}{Path(f.file).name}:{f.line} in {f.function}: {f.code}",
                    "C3" if mark else "black",
                    "bold" if mark else "normal",
                )
            )
    fig, (ax,) = new_figure(1, width_in=9.0, height_in=0.35 * len(rows) + 0.8)
    ax.set_axis_off()
    for i, (text, color, weight) in enumerate(rows):
        ax.text(
            0.0,
            1 - (i + 0.5) / len(rows),
            text,
            family="monospace",
            fontsize=9,
            color=color,
            weight=weight,
            va="center",
            transform=ax.transAxes,
        )
    ax.set_title("expkit why: traceback read top to bottom, the place to look in red", fontsize=10, loc="left")
    return save_figure(fig, ctx.figure_path("c1_4_traceback.png"))


def _crash(script: Path) -> str:
    import runpy

    try:
        runpy.run_path(str(script), run_name="__main__")
    except ImportError:  # torch missing (the light install): no traceback to read, so no verdict; `needs`
        raise
    except Exception as exc:  # noqa: BLE001 - the traceback is the material of this lab
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    raise RuntimeError("the user script was expected to fail")


@lab(id="C1.4", title="Reading a traceback: the last frame of yours", claims=("C1.4",), seed=(SEED_RULE,))
def run(ctx: LabContext) -> LabOutput:
    # The user's model is an nn.Module: without torch the script dies on its import, a traceback that is not
    # this lab's material (the light install judged that one "not reproduced"). The runner marks the lab
    # `needs expkit[torch]` on this ImportError.
    import torch  # noqa: F401

    from expkit.diagnose import collapse_frames, diagnose_text, format_report

    with tempfile.TemporaryDirectory(prefix="expkit-c1_4-") as tmp:
        script = Path(tmp) / "my_model.py"
        script.write_text(USER_SCRIPT)
        text = _crash(script)
    expected_line = next(i for i, line in enumerate(USER_SCRIPT.splitlines(), 1) if "the place to look" in line)
    d = diagnose_text(text)
    tb, ex = d.traceback, d.explanation
    if tb.final is None:
        raise RuntimeError("expkit why parsed no exception from the user script's traceback")
    frames = tb.final.frames
    kinds = {k: sum(f.kind == k for f in frames) for k in ("yours", "framework", "stdlib")}
    call_impl = sum(f.function in ("_call_impl", "_wrapped_call_impl") for f in frames)
    groups = collapse_frames(frames)
    chosen = tb.chosen_frame
    found = chosen is not None and chosen.file == str(script) and chosen.line == expected_line
    ctx.figure_path("c1_4_why_report.txt").write_text(text + "\n--- expkit why ---\n" + format_report(tb, ex) + "\n")
    figure = _draw_frames(ctx, groups, chosen)
    # the seed's rule applied by hand to the parsed frames: bottom-up, the first frame in the user's own file
    by_hand = next((f for f in reversed(frames) if f.file == str(script)), None)
    by_hand_ok = by_hand is not None and by_hand.line == expected_line
    where = f"{Path(chosen.file).name}:{chosen.line} in {chosen.function}" if chosen else "none"
    measurements = (
        judged(
            "user_frame",
            "the seed's reading rule lands on the line with the bug",
            found and by_hand_ok,
            "",
            rule=Shown(f"bottom-up, past {call_impl} _call_impl frames, the last frame of yours is the bug's line"),
            seed=SEED_RULE,
            detail=f"expkit why chose {where}"
            + (f" ({chosen.code})" if chosen and chosen.code else "")
            + f"; by hand: line {by_hand.line if by_hand else 'none'}; the bug is on line {expected_line}",
        ),
        Measurement(
            "frames_total",
            "frames in the traceback",
            len(frames),
            "",
            detail=f"yours {kinds['yours']}, framework {kinds['framework']}, stdlib {kinds['stdlib']}",
        ),
        Measurement("call_impl_frames", "_call_impl / _wrapped_call_impl frames skipped", call_impl, ""),
        Measurement(
            "lines_shown",
            "lines after collapsing framework runs",
            len(groups),
            "",
            detail=f"{sum(g.collapsed for g in groups)} collapsed runs",
        ),
        Measurement("explanation", "explanation", f"{ex.kind}: {ex.title}", "", detail=ex.module or ""),
    )
    explanation = (
        f"A shape bug two modules deep produced a traceback of {len(frames)} frames, {call_impl} of them "
        "nn.Module's _call_impl/_wrapped_call_impl plumbing. Read bottom-up, the last frame is "
        f"{Path(frames[-1].file).name}:{frames[-1].line} in {frames[-1].function} ({frames[-1].kind}); the first "
        f"frame of yours above it is line {by_hand.line if by_hand else '?'}, "
        f"{'the line with the bug' if by_hand_ok else f'not the bug (line {expected_line})'}. expkit why marks "
        f"{where}{' too' if found and by_hand_ok else ''}, collapses each framework run into one line "
        f"({len(groups)} lines "
        f"instead of {len(frames)} frames), pulls the shapes out of the message ({ex.shapes}) and names the "
        f"module ({ex.module}). The full text and report are in c1_4_why_report.txt."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(figure,))
