"""Lab C2.1: the axis is one concept, and broadcasting turns shape bugs into wrong numbers without an
error; ``expect_shape`` turns them back into errors."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_BROADCAST = SeedFigure("broadcast_shape", "(3,) + (3, 1)", None, "", "(3,) + (3, 1) silently becomes (3, 3)")
SEED_ASSERT = SeedFigure("expect_shape_caught", "assert shapes at key points", None, "", "assert shapes at key points")


@lab(id="C2.1", title="The axis, and the broadcasting trap", claims=("C2.1",), seed=(SEED_BROADCAST, SEED_ASSERT))
def run(ctx: LabContext) -> LabOutput:
    import numpy as np
    import torch

    from expkit.check import Dims, ShapeError, expect_shape
    from expkit.render.figures import new_figure, save_figure

    # 1. the seed's example, in numpy and in torch: no error, a (3, 3) result
    np_shape = (np.zeros(3) + np.zeros((3, 1))).shape
    torch_shape = tuple((torch.zeros(3) + torch.zeros(3, 1)).shape)

    # 2. the same trap in a real computation: a regression loss with targets stored as a column
    n = 200 if ctx.quick else 2_000
    rng = np.random.default_rng(ctx.seed)
    target = rng.standard_normal(n)
    pred = target + 0.1 * rng.standard_normal(n)  # a good model: residual sd 0.1
    target_col = target[:, None]  # (n, 1), as read from a 2-D table
    right = float(np.mean((pred - target) ** 2))
    buggy = float(np.mean((pred - target_col) ** 2))  # (n,) - (n, 1) -> (n, n): every pred vs every target
    caught, message = False, ""
    try:
        dims = Dims(N=n)
        expect_shape(pred, "N", dims, name="pred")
        expect_shape(pred - target_col, "N", dims, name="pred - target")
    except ShapeError as exc:
        caught, message = True, exc.message

    # 3. the axis: softmax normalized along the wrong axis still returns numbers of the right shape
    logits = rng.standard_normal((4, 10))  # (batch, classes)

    def softmax(x, axis):  # noqa: ANN001, ANN202
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    wrong = softmax(logits, axis=0)  # normalized over the batch, not the classes
    row_sum_err = float(np.max(np.abs(wrong.sum(axis=1) - 1.0)))
    right_sum_err = float(np.max(np.abs(softmax(logits, axis=1).sum(axis=1) - 1.0)))

    fig, (ax1, ax2) = new_figure(2, width_in=4.6)
    ax1.bar(["right (N,)", f"broadcast ({n},{n})"], [right, buggy], color=["C2", "C3"])
    ax1.set(yscale="log", ylabel="mean squared error", title="(N,) - (N, 1): the loss is silently wrong")
    ax2.bar(["axis=1 (classes)", "axis=0 (batch)"], [right_sum_err + 1e-17, row_sum_err], color=["C2", "C3"])
    ax2.set(yscale="log", ylabel="max |sum over classes - 1|", title="softmax along the wrong axis")
    path = save_figure(fig, ctx.figure_path("c2_1_broadcast.png"))

    silent = np_shape == (3, 3) and torch_shape == (3, 3)
    measurements = (
        judged(
            "broadcast_shape",
            "(3,) + (3, 1) gives (3, 3) without an error, numpy and torch",
            silent,
            "",
            rule=Shown("broadcasting turned (3,) + (3, 1) into (3, 3) silently"),
            seed=SEED_BROADCAST,
            detail=f"numpy {np_shape}, torch {torch_shape}",
        ),
        judged(
            "expect_shape_caught",
            "asserting 'N' on pred - target raised",
            caught,
            "",
            rule=Shown("a shape assertion at the loss turns the silent (N, N) into an error"),
            seed=SEED_ASSERT,
            detail=message,
        ),
        Measurement("mse_right", "MSE of a good model, shapes right", right, "", detail=f"n = {n}, residual sd 0.1"),
        Measurement(
            "mse_broadcast",
            "the same MSE with targets as (N, 1): silently (N, N)",
            buggy,
            "",
            detail=f"{buggy / right:.0f}x the right value, no error from numpy",
        ),
        Measurement(
            "softmax_wrong_axis_err",
            "softmax over the batch axis: max |row sum - 1|",
            row_sum_err,
            "",
            detail=f"right axis: {right_sum_err:.1e}",
        ),
    )
    explanation = (
        f"numpy turned (3,) + (3, 1) into a {np_shape} array and torch into {torch_shape}, "
        f"{'without a word' if silent else 'not the silent (3, 3) the seed describes'}. In a loss this is "
        f"not a curiosity: a model whose mean squared error is {right:.4f} scores {buggy:.3f} "
        f"({buggy / right:.0f}x) when the targets arrive as a column, because every prediction is "
        f"compared with every target. The code runs and the number is wrong. "
        + (
            f"expkit.check.expect_shape, asserting 'N' on the difference, raised: \"{message}\".\n\n"
            if caught
            else "expkit.check.expect_shape, asserting 'N' on the difference, did not raise.\n\n"
        )
        + f"The axis is the same concept in every reduction: a softmax normalized along the batch axis instead "
        f"of the classes still returns a (4, 10) array of positive numbers, but its rows miss a sum of 1 by up "
        f"to {row_sum_err:.2f}. Naming dimensions ('B T D') and asserting them at module boundaries is the cheap "
        f"guard the seed recommends."
    )
    return LabOutput(measurements=measurements, explanation=explanation, figures=(path,))
