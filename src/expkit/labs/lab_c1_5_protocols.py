"""Lab C1.5: the syntax of a training loop is Python protocols. Instrumented Dataset, DataLoader, Module
and no_grad record which dunder methods a plain ``for``/``with``/call actually invokes."""

from __future__ import annotations

from collections import Counter

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_PROTOCOLS = SeedFigure(
    "protocols_seen",
    "the protocols under the five objects",
    None,
    "",
    "__getitem__/__len__, __iter__/__next__, __call__, context managers, decorators",
)
EXPECTED = (
    "Dataset.__len__",
    "Dataset.__getitem__",
    "DataLoader.__iter__",
    "iterator.__next__",
    "Module.__call__",
    "Module.forward",
    "no_grad.__enter__",
    "no_grad.__exit__",
    "decorator.__call__",
)


def _instrumented_loop(n_items: int, batch_size: int) -> list[str]:
    """Run a tiny eval loop over instrumented objects; returns the protocol calls in order."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    log: list[str] = []

    class LoggedDataset(Dataset):
        def __len__(self):
            log.append("Dataset.__len__")
            return n_items

        def __getitem__(self, i):
            log.append("Dataset.__getitem__")
            return torch.full((4,), float(i))

    class LoggedIterator:
        def __init__(self, inner):
            self.inner = inner

        def __next__(self):
            log.append("iterator.__next__")
            return next(self.inner)

    class LoggedLoader(DataLoader):
        def __iter__(self):
            log.append("DataLoader.__iter__")
            return LoggedIterator(super().__iter__())

    class LoggedModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def __call__(self, *args, **kwargs):
            log.append("Module.__call__")
            return super().__call__(*args, **kwargs)

        def forward(self, x):
            log.append("Module.forward")
            return self.fc(x)

    class logged_no_grad(torch.no_grad):  # noqa: N801 - mirrors torch.no_grad
        def __enter__(self):
            log.append("no_grad.__enter__")
            return super().__enter__()

        def __exit__(self, *exc):
            log.append("no_grad.__exit__")
            return super().__exit__(*exc)

        def __call__(self, fn):
            log.append("decorator.__call__")
            return super().__call__(fn)

    model = LoggedModel()

    @logged_no_grad()  # a decorator is a call at definition time that returns the wrapped function
    def evaluate(x):
        return model(x).sum()

    loader = LoggedLoader(LoggedDataset(), batch_size=batch_size)
    for batch in loader:  # __iter__ once, then __next__ until StopIteration
        with logged_no_grad():  # __enter__ / __exit__
            model(batch)  # __call__ -> hooks -> forward
        evaluate(batch)  # the decorator's wrapper enters no_grad again
    return log


@lab(id="C1.5", title="Protocols under Dataset, DataLoader, Module, no_grad", claims=("C1.5",), seed=(SEED_PROTOCOLS,))
def run(ctx: LabContext) -> LabOutput:
    n_items, batch_size = 6, 4
    log = _instrumented_loop(n_items, batch_size)
    counts = Counter(log)
    missing = [p for p in EXPECTED if counts[p] == 0]
    n_batches = -(-n_items // batch_size)
    first = " -> ".join(log[:9])
    measurements = (
        judged(
            "protocols_seen",
            "every protocol method the seed names ran in a plain eval loop",
            not missing,
            "",
            rule=Shown("for, with, model(x) and @decorator each ran their protocol methods"),
            seed=SEED_PROTOCOLS,
            detail=f"{len(EXPECTED) - len(missing)}/{len(EXPECTED)} observed: "
            + ", ".join(f"{p} x{counts[p]}" for p in EXPECTED)
            + (f"; missing {missing}" if missing else ""),
        ),
        Measurement(
            "getitem_calls",
            f"__getitem__ calls for {n_items} items",
            counts["Dataset.__getitem__"],
            "",
            detail=f"batch_size {batch_size}: the fetcher calls it once per item, then collate stacks the items",
        ),
        Measurement(
            "next_calls",
            f"__next__ calls for {n_batches} batches",
            counts["iterator.__next__"],
            "",
            detail="one per batch plus the final one that raises StopIteration",
        ),
        Measurement(
            "call_vs_forward",
            "Module.__call__ / Module.forward calls",
            f"{counts['Module.__call__']}/{counts['Module.forward']}",
            "",
            detail="model(x) runs __call__, which runs hooks and then forward; never call forward directly",
        ),
    )
    explanation = (
        f"A six-line eval loop over {n_items} items ran these protocol methods: {first} ... "
        f"`for batch in loader` is __iter__ once and __next__ {counts['iterator.__next__']} times (the last raises "
        f"StopIteration); the default sampler asked the Dataset for __len__ and the fetcher called __getitem__ "
        f"{counts['Dataset.__getitem__']} times; `model(x)` is Module.__call__, which runs hooks then forward; "
        "`with torch.no_grad():` is __enter__/__exit__; `@torch.no_grad()` is a decorator, a call that wraps the "
        "function at definition time. Knowing the protocol tells you where to put a breakpoint or a hook."
        + (f" Not observed in this run: {', '.join(missing)}." if missing else "")
    )
    return LabOutput(measurements=measurements, explanation=explanation)
