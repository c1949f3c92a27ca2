"""What the doctor still watches once the watched steps are over (issue 32).

A model put in ``eval()`` for a validation that runs after the first steps (at an epoch's end, every k steps) and
never put back in ``train()`` trains on with dropout off and batch-norm statistics frozen. Two light hooks stay
after the watch, at a cost per call, not per tensor: ``Module.train`` (``eval()`` calls it) records where a model
was put in eval mode, and an optimizer step pre-hook asks, only while such a record is open, whether the stepping
optimizer's parameters got their gradients through that model while it was still in eval mode. The first such
step is reported as ``train_in_eval_mode`` at the ``eval()`` line, and both hooks are removed.

``Optimizer.__init__`` stays wrapped: an optimizer built again at the line of one still alive, over the same
parameters whose state that one holds (made inside the epoch loop), is the watch's ``optimizer_rebuilt``. Any other
optimizer built after the watch starts a second phase (fine-tuning after pretraining, a new head on a trained
body): a fresh probe watches that optimizer's first steps for
what a new phase gets wrong: parameters it does not hold or update, gradients cut or stale, a step that changes
nothing (``PHASE_CHECKS``; its findings count their steps from the program's start). One second watch at most.
``Module.__init__`` stays wrapped until then too (a stack per module built, no cost per step): the second watch
names a module of its phase where it was made (``PeftModel.from_pretrained(...)``, a new head), as the first does.
``Module.load_state_dict`` stays wrapped as well (a cost per call): a non-strict load after the watch that fills
little of the model (a fine-tune loading its pretraining's checkpoint under a wrapper's key prefix) is the watch's
``weights_not_loaded``."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.optim import optimizer as optimizer_mod

from expkit.doctor.checks.modes import MODE_LAYERS, mode_layers
from expkit.doctor.checks.optimizers import OptimizerRebuilt
from expkit.doctor.checks.setup_state import WeightsNotLoaded, _strict
from expkit.doctor.findings import RawStack, construction_stack, raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe


# what a second phase's optimizer is watched for: whether it holds and updates what trains. Checks of the start
# of training (the first loss against ln C, a label column in the features) read a trained model's second phase
# wrongly: run on, a DINO's linear probe and a peft model trained on after merging got such findings (round eleven)
PHASE_CHECKS = (
    "param_not_in_optimizer",
    "trainable_not_updated",
    "no_gradient_reached",
    "gradient_cut",
    "missing_zero_grad",
    "zero_grad_before_step",
    "step_changes_nothing",
    "adapter_in_inference_mode",  # an adapter resumed with PeftModel.from_pretrained(...) for a new phase, frozen
    "probabilities_into_loss",  # a student distilled after its teacher trained: kl_div given the student's softmax
    "loss_mask",  # an adapter fine-tuned after pretraining: labels shifted by hand, padding trained, the answer masked
    "frozen_norm_updates_stats",  # a linear probe on a pretrained backbone: model.train() moves its frozen BN stats
    "masked_rows_updated",  # new token rows trained after pretraining, the old ones masked by a hook, AdamW decays
)


MODULES_KEPT = 4096  # records of modules built after the watch, at most


class AfterWatch:
    """The hooks left after the watch; :meth:`install` once, they remove themselves after their one finding."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self.evals: dict[int, tuple[weakref.ref[nn.Module], RawStack]] = {}  # id(module) -> (module, eval() stack)
        self.steps: dict[int, int] = dict(probe.steps_by_optimizer)
        self._inner = False  # eval() on a model calls train(False) on each submodule: only the outermost counts
        self._hook: Any = None
        self._original: Any = None
        self._wrapper: Any = None
        self._init: Any = None  # Optimizer.__init__ as it was, while ours wraps it
        self._init_wrapper: Any = None
        self.second: Probe | None = None  # the watch of an optimizer built after the first watch
        # where each module built after the watch was made (id -> stack), until a second watch starts: that watch
        # names a module of its phase (a peft model from PeftModel.from_pretrained, a new head) at its line
        self.modules_made: dict[int, RawStack] = {}
        self._module_init: Any = None  # nn.Module.__init__ as it was, while ours wraps it
        self._module_init_wrapper: Any = None
        self._load: Any = None  # nn.Module.load_state_dict as it was, while ours wraps it
        self._load_wrapper: Any = None

    def install(self) -> AfterWatch:
        self._original = nn.Module.__dict__["train"]
        original, after = self._original, self

        def train(module: nn.Module, mode: bool = True) -> Any:
            if after._inner or after._hook is None:  # inside an outer eval(), or switched off
                return original(module, mode)
            after._inner = True
            try:
                after._record(module, mode)
                return original(module, mode)
            finally:
                after._inner = False

        self._wrapper = train
        nn.Module.train = train  # type: ignore[method-assign,assignment]
        self._hook = optimizer_mod.register_optimizer_step_pre_hook(self._step_pre)
        self._init = torch.optim.Optimizer.__dict__["__init__"]
        init = self._init

        def __init__(opt: Any, *args: Any, **kwargs: Any) -> None:
            init(opt, *args, **kwargs)
            if after._init is not None:
                after._built(opt, construction_stack(opt, 2))

        torch.optim.Optimizer.__init__ = __init__  # type: ignore[method-assign,assignment]
        self._init_wrapper = __init__
        self._module_init = nn.Module.__dict__["__init__"]
        module_init = self._module_init

        def module_init_wrapper(module: nn.Module, *args: Any, **kwargs: Any) -> None:
            module_init(module, *args, **kwargs)
            if after._module_init is not None:
                after._module_built(module)

        nn.Module.__init__ = module_init_wrapper  # type: ignore[method-assign,assignment]
        self._module_init_wrapper = module_init_wrapper
        self._load = nn.Module.__dict__["load_state_dict"]
        load = self._load

        def load_state_dict(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
            result = load(module, *args, **kwargs)
            if after._load is not None:
                after._loaded(module, args, kwargs, result)
            return result

        nn.Module.load_state_dict = load_state_dict  # type: ignore[method-assign,assignment]
        self._load_wrapper = load_state_dict
        return self

    def _loaded(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        """A non-strict ``load_state_dict`` after the watch (a fine-tune loading what its pretraining saved) is
        judged as the watch judges one (``weights_not_loaded``); the first finding ends this watch."""
        if _strict(args, kwargs):  # the arguments after the module, as the watch's own call event has them
            return
        try:
            if WeightsNotLoaded().judge(self.probe, module, args[0] if args else kwargs.get("state_dict"), result):
                self._end_load_watch()
        except Exception as exc:  # noqa: BLE001 - the doctor's own error never reaches the program
            self.probe.check_failed(WeightsNotLoaded.name, exc)

    def _end_load_watch(self) -> None:
        if self._load is not None and nn.Module.__dict__.get("load_state_dict") is self._load_wrapper:
            nn.Module.load_state_dict = self._load  # type: ignore[method-assign]
        self._load = None

    def _module_built(self, module: nn.Module) -> None:
        """Record where a module built after the watch was made (bounded: a loss module built every step of a
        long run must not grow it; the oldest records go first)."""
        try:
            if len(self.modules_made) >= MODULES_KEPT:
                del self.modules_made[next(iter(self.modules_made))]
            self.modules_made[id(module)] = construction_stack(module, 3)
        except Exception:  # noqa: BLE001, S110 - recording must never break the program
            pass

    def _built(self, opt: torch.optim.Optimizer, stack: RawStack) -> None:
        """An optimizer built after the watch: the same one rebuilt at its line (each epoch) is reported by the
        watch's ``optimizer_rebuilt``; any other starts the second watch (one at most)."""
        rebuilds = next((c for c in self.probe.checks if isinstance(c, OptimizerRebuilt)), None)
        if rebuilds is not None:
            try:
                self.probe.step = max(self.steps.values(), default=self.probe.step)  # the finding's step
                if rebuilds.built(self.probe, opt, stack):
                    return
            except Exception as exc:  # noqa: BLE001 - the doctor's own error never reaches the program
                self.probe.check_failed(rebuilds.name, exc)
        if self.second is None:
            self._watch_again(opt)
            if rebuilds is None:
                self._end_phase_watch()  # nothing else watches constructions

    def _watch_again(self, opt: torch.optim.Optimizer) -> None:
        """An optimizer built after the watch starts a second phase (fine-tuning after pretraining, a new head):
        a fresh probe watches its first steps as the first one watched the program's."""
        from expkit.doctor.probe import Probe

        try:
            done = max(self.steps.values(), default=0)
            second = Probe(
                watch_steps=self.probe.watch_steps, sink=self.probe.sink, checks=list(PHASE_CHECKS), steps_before=done
            )
            second.install()
            second.optimizers.add(opt)
            second.made_at[id(opt)] = (0, raw_stack(3))
            # what the first watch and the time since saw built came before this optimizer (negative orders)
            made = {key: stack for key, (_, stack) in sorted(self.probe.made_at.items(), key=lambda kv: kv[1][0])}
            for key, stack in self.modules_made.items():  # a later object under a reused id is the one alive
                made.pop(key, None)
                made[key] = stack
            made.pop(id(opt), None)
            for order, (key, stack) in enumerate(made.items(), start=-len(made)):
                second.made_at[key] = (order, stack)
            self._end_module_watch()
            self.second = second
        except Exception as exc:  # noqa: BLE001 - the doctor's own error never reaches the program
            self.probe.check_failed("second_watch", exc)

    def close(self) -> None:
        """At the program's end: a second watch not over yet reports what it has."""
        if self.second is not None:
            self.second.finish()

    def uninstall(self) -> None:
        self._end_eval_watch()
        self._end_phase_watch()
        self._end_load_watch()

    def _end_eval_watch(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        self.evals = {}
        if self._wrapper is not None and nn.Module.__dict__.get("train") is self._wrapper:
            nn.Module.train = self._original  # type: ignore[method-assign]
        # else another wrapper went on top of ours since (a second watch's): ours stays under it, switched off

    def _end_module_watch(self) -> None:
        if self._module_init is not None and nn.Module.__dict__.get("__init__") is self._module_init_wrapper:
            nn.Module.__init__ = self._module_init  # type: ignore[method-assign]
        # else another wrapper went on top of ours since (a second watch's): ours stays under it, switched off
        self._module_init = None
        self.modules_made = {}

    def _end_phase_watch(self) -> None:
        self._end_module_watch()
        if self._init is not None and torch.optim.Optimizer.__dict__.get("__init__") is self._init_wrapper:
            torch.optim.Optimizer.__init__ = self._init  # type: ignore[method-assign]
        self._init = None

    def _record(self, module: nn.Module, mode: bool) -> None:
        if mode:
            if self.evals:  # HF Trainer calls model.train() every step: nothing to walk when no eval() is open
                for sub in module.modules():  # model.train() after evaluating a part (model.encoder.eval()) undoes it
                    self.evals.pop(id(sub), None)
        elif mode_layers(module):
            self.evals[id(module)] = (weakref.ref(module), raw_stack(3))

    def _step_pre(self, opt: Any, args: Any, kwargs: Any) -> None:
        n = self.steps[id(opt)] = self.steps.get(id(opt), 0) + 1
        if not self.evals:
            return
        try:
            self._judge(opt, n)
        except Exception as exc:  # noqa: BLE001 - the doctor's own error never reaches the program
            self.probe.check_failed("modes", exc)
            self._end_eval_watch()

    def _judge(self, opt: Any, n: int) -> None:
        stepped = {id(p) for g in opt.param_groups for p in g["params"] if p.grad is not None}
        for key, (ref, stack) in list(self.evals.items()):
            module = ref()
            if module is None:
                del self.evals[key]
                continue
            layers = mode_layers(module)
            if not layers or any(m.training for m in module.modules() if isinstance(m, MODE_LAYERS)):
                continue  # put back in train() another way, or modes chosen layer by layer
            if not any(id(p) in stepped for p in module.parameters()):
                continue  # a frozen model (a teacher, a target network) kept in eval() on purpose
            self.probe.step = n - 1  # steps done: the finding names the step being taken
            self.probe.report(
                kind="bug",
                check="train_in_eval_mode",
                message=f"{type(module).__name__} was put in eval() after the first steps (an evaluation) and is "
                f"trained on in eval mode from step {n}: {len(layers)} dropout/batch-norm layer(s) "
                f"({', '.join(layers[:3])}) run as at inference (no dropout, frozen statistics)",
                evidence={"training": False, "mode_layers": len(layers), "step": n},
                fix="call model.train() after each evaluation (at the top of each epoch), before the next training "
                "step",
                where=user_line_of(stack),
            )
            self._end_eval_watch()
            return
