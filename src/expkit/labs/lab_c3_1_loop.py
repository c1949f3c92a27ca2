"""Lab C3.1: five objects and twenty lines; each line of the loop touches one object, traced while it runs."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_LOOP = SeedFigure(
    "loop_objects",
    "objects the 20-line loop touches",
    None,
    "",
    "five objects (Dataset, DataLoader, nn.Module, loss, Optimizer) plus autograd; one line, one concept",
)
EXPECTED_ORDER = (
    "Dataset.__getitem__",
    "Module.__call__ -> forward",
    "autograd recorded the graph",
    "loss:",
    "autograd accumulated .grad",
    "Optimizer.step",
    "Optimizer.zero_grad",
)


@lab(id="C3.1", title="The visible loop: five objects plus autograd", claims=("C3.1",), seed=(SEED_LOOP,))
def run(ctx: LabContext) -> LabOutput:
    from expkit.train import CharLM, CharLMConfig, TrainConfig, count_parameters, load_corpus
    from expkit.train.protocol import annotated_loop_lines, trace_protocol_calls

    corpus = load_corpus()
    n_weights = count_parameters(CharLM(CharLMConfig()))
    steps = 2 if ctx.quick else 4
    trace = trace_protocol_calls(
        corpus=corpus,
        model_config=CharLMConfig(),
        steps=steps,
        seed=ctx.seed,
        train_config=TrainConfig(batch_size=4, seq_len=64),
    )
    lines = annotated_loop_lines()
    # the first step's events must come in the loop's order: data, forward, graph, loss, backward, step, clear
    pos = [next((i for i, e in enumerate(trace.first_step) if e.startswith(want)), -1) for want in EXPECTED_ORDER]
    in_order = all(p >= 0 for p in pos) and pos == sorted(pos)
    objects = sorted({line.touches for line in lines if line.touches != "-"})
    n_params = trace.counts.get("autograd accumulated .grad", 0) // steps
    measurements = (
        judged(
            "loop_objects",
            "one traced step calls data, forward, graph, loss, backward, step, clear in order",
            in_order,
            "",
            rule=Shown("each line of the loop touches one object, in the loop's order"),
            seed=SEED_LOOP,
            detail=" -> ".join(trace.first_step)
            + f" (traced over {steps} real train_step calls on the {n_weights:,}-parameter char LM)",
        ),
        Measurement(
            "loop_lines",
            "commented lines in train_step",
            len(lines),
            "lines",
            detail="; ".join(f"{line.code.split('(')[0][:28]} -> {line.touches}" for line in lines),
        ),
        Measurement("grads_per_step", "parameters whose .grad autograd accumulated per step", n_params, "tensors"),
    )
    explanation = (
        f"expkit's train_step has {len(lines)} commented lines; each touches one object ({', '.join(objects)}). "
        f"Running it with a hook on every object {'shows' if in_order else 'does not show, in order,'} the protocol "
        "the seed describes: the DataLoader asks the "
        f"Dataset for {trace.counts.get('Dataset.__getitem__', 0) // steps} windows (one per row) and collates "
        "them, the nn.Module's __call__ runs forward while autograd records the graph, cross_entropy makes the "
        f"loss (its dtype and ignored labels are observed in C3.6), backward accumulates into .grad of all "
        f"{n_params} parameter tensors, "
        "the Optimizer steps and zero_grad(set_to_none=True) clears. What a Trainer adds is the shell around "
        "these lines: schedule, checks, evals, checkpoints, logging, DDP (expkit.train.training)."
    )
    return LabOutput(measurements=measurements, explanation=explanation)
