"""A ``DistributedSampler`` that shuffles but never gets ``set_epoch``: its permutation is seeded by
``seed + epoch``, so without ``set_epoch(epoch)`` every epoch visits the data in the same order on every
rank (PyTorch's DistributedSampler docstring: "calling set_epoch() ... is necessary to make shuffling
work properly across multiple epochs")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from expkit.doctor.checks import Check, register

if TYPE_CHECKING:
    from expkit.doctor.probe import CallEvent, Probe


@register
class SamplerWithoutSetEpoch(Check):
    """A shuffling DistributedSampler iterated a second time (an epoch boundary) with the same ``epoch`` as
    the first time: ``set_epoch`` was not called in between."""

    name = "sampler_without_set_epoch"

    def __init__(self) -> None:
        self.epochs: dict[int, tuple[int, int]] = {}  # id(sampler) -> (epoch at the last __iter__, iterations)

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        sampler = ev.obj
        if ev.name != "sampler.iter" or sampler is None or not getattr(sampler, "shuffle", False):
            return
        epoch = int(getattr(sampler, "epoch", 0))
        last = self.epochs.get(id(sampler))
        self.epochs[id(sampler)] = (epoch, 1 if last is None else last[1] + 1)
        if last is None or last[0] != epoch:
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"a shuffling DistributedSampler started epoch {last[1] + 1} with sampler.epoch still "
            f"{epoch}: set_epoch() was never called, so every epoch repeats the same order on each of its "
            f"{getattr(sampler, 'num_replicas', '?')} ranks",
            evidence={
                "sampler_epoch": epoch,
                "epochs_started": last[1] + 1,
                "num_replicas": getattr(sampler, "num_replicas", None),
                "samples_per_rank": getattr(sampler, "num_samples", None),
            },
            fix="call loader.sampler.set_epoch(epoch) at the start of each epoch, before iterating the loader",
        )
