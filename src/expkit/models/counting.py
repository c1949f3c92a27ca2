"""Exact parameter counts from a config: the real transformers class built on the meta device (no weights).

Layers are grouped by kind (the names and shapes of their parameters). ``active_params`` follows from the
groups and the routing (top-k of E routed experts); LoRA adapters are counted by the installed peft on a
model that keeps one layer of each kind, then multiplied by how many layers have that kind, which equals
peft on the full-depth model (tested) in a fraction of the time.

``with torch.device("meta"):`` keeps tied embeddings tied; accelerate's ``init_empty_weights()`` unties
them (Qwen2.5-0.5B would then count 630M instead of 494M), so it is not used here.
"""

from __future__ import annotations

import re
import warnings
from collections import OrderedDict
from dataclasses import dataclass, fields, replace
from typing import Any

from expkit.errors import MissingDependency, UsageError
from expkit.models.description import ModelDescription
from expkit.models.sanity import check_at_least, check_non_negative

__all__ = [
    "ACTIVE_CONVENTION",
    "ADAMW_MIXED_BYTES_PER_PARAM",
    "ALL_LINEAR",
    "LayerKindCount",
    "ParameterCount",
    "build_meta_model",
    "count_model",
    "training_fields",
]

ALL_LINEAR = "all-linear"
# fp32 master 4 + fp32 grad 4 + Adam m 4 + Adam v 4 = 16 B per trainable parameter (seed C4.1;
# ZeRO paper, Rajbhandari et al. 2020, sec. 3.1 counts 2 + 2 + 12 = 16 with a bf16 weight and grad).
ADAMW_MIXED_BYTES_PER_PARAM = 16
ACTIVE_CONVENTION = (
    "active_params: weights a text token's forward pass multiplies by: per layer the attention, the dense MLP "
    "or the top-k routed experts + shared experts + router, the norms, and the output head (even when tied). "
    "Left out: the input embedding (a row lookup) and the towers. Published active counts (Mixtral 12.9B, "
    "Qwen3-30B-A3B 3.3B, DeepSeek-V3 37B) include the input embedding: that is active_params_with_embedding."
)
_TOWER_HINTS = ("visual", "vision", "audio", "speech", "image", "multi_modal_projector", "mm_projector")


@dataclass(frozen=True)
class LayerKindCount:
    """One kind of decoder layer: how many layers have it, parameters per layer, active per token, LoRA."""

    label: str
    layers: int
    params_per_layer: int
    active_params_per_layer: int
    routed_expert_params_per_layer: int
    adapter_params_per_layer: int
    matmul_params_per_layer: int = 0  # weights of 2-D and fused 3-D matmul parameters (not norms, biases)
    # with LoRA: the layer's matmul modules (nn.Linear, fused experts) the installed peft wrapped, and those it
    # left frozen without an adapter (peft 0.21's all-linear skips DeepSeek-V3's dense MLP and shared experts,
    # and Llama-4's fused experts); names relative to the layer
    lora_adapted: tuple[str, ...] = ()
    lora_left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParameterCount:
    """Parameter counts of a model, and of its LoRA adapters when ``lora_r`` is set: the one count type of
    the memory ledger, ``sft params`` and ``count_model``.

    ``trainable_fraction`` is trainable / base parameters (peft's ``print_trainable_parameters`` divides
    by base + adapters instead: that is ``trainable_fraction_of_all``).
    ``training_state_bytes`` = trainable * 16 (fp32 master, grad, Adam m, Adam v).
    ``model_class`` is the transformers class built on the meta device, None for an analytic count
    (``counted_by`` says why). ``adapter_params`` is 0 without LoRA.
    """

    model: str
    method: str
    total_params: int
    trainable_params: int
    adapter_params: int
    trainable_fraction: float
    trainable_fraction_of_all: float
    training_state_bytes: int
    embedding_params: int
    lm_head_params: int
    per_layer_params: int
    num_layers: int
    tied_embeddings: bool
    lora_r: int | None
    lora_alpha: float | None
    lora_targets: tuple[str, ...]
    counted_by: str
    linear_module_names: tuple[str, ...]
    active_params: int
    active_params_with_embedding: int
    tower_params: int
    head_matmul_params: int
    decoder_layer_params: int
    other_params: int
    model_class: str | None
    layer_kinds: tuple[LayerKindCount, ...] = ()
    approximations: tuple[str, ...] = ()
    active_convention: str = ACTIVE_CONVENTION

    def __post_init__(self) -> None:
        what = f"{self.model} parameter count"
        ints = [(f.name, v) for f in fields(self) if type(v := getattr(self, f.name)) is int]
        check_non_negative(what, ints)
        check_at_least(what, "total_params", self.total_params, "embedding_params", self.embedding_params)
        check_at_least(what, "embedding_params", self.embedding_params, "1", 1)


def training_fields(
    total: int, adapters: int, lora_r: int | None, lora_alpha: float | None, lora_targets: tuple[str, ...]
) -> dict[str, Any]:
    """The ParameterCount fields that follow from the base count and the LoRA setting (method, total,
    trainable, the two fractions, training-state bytes, the LoRA fields): one rule for every way of counting."""
    trainable = adapters if lora_r is not None else total
    return {
        "method": "lora" if lora_r is not None else "full",
        "total_params": total,
        "trainable_params": trainable,
        "adapter_params": adapters,
        "trainable_fraction": trainable / total,
        "trainable_fraction_of_all": trainable / (total + adapters),
        "training_state_bytes": trainable * ADAMW_MIXED_BYTES_PER_PARAM,
        "lora_r": lora_r,
        "lora_alpha": (lora_alpha if lora_alpha is not None else 2.0 * lora_r) if lora_r is not None else None,
        "lora_targets": lora_targets if lora_r is not None else (),
    }


def _model_classes(desc: ModelDescription) -> list[Any]:
    import transformers

    classes = []
    if desc.architecture and hasattr(transformers, desc.architecture):
        classes.append(getattr(transformers, desc.architecture))
    autos: tuple[str, ...] = (
        "AutoModelForCausalLM",
        "AutoModelForImageTextToText",
        "AutoModelForSeq2SeqLM",
        "AutoModel",
    )
    if desc.is_encoder_decoder:  # BART and Whisper also have a decoder-only *ForCausalLM: not the model
        autos = ("AutoModelForSeq2SeqLM", "AutoModelForSpeechSeq2Seq", "AutoModel")
    for auto in autos:
        classes.append(getattr(transformers, auto))
    return classes


def build_meta_model(desc: ModelDescription) -> Any | None:
    """The model of ``desc`` on the meta device (shapes only): the class named in ``architectures`` when
    transformers has it, else the first Auto class (causal LM, image-text-to-text, seq2seq, base) that
    accepts the config. None when transformers does not know the model_type."""
    try:
        import torch
        from transformers import AutoConfig
    except ImportError as exc:
        raise MissingDependency(
            "counting parameters needs torch and transformers", hint="pip install 'expkit[hf]'"
        ) from exc
    if not desc.model_type:
        return None
    kwargs = {k: v for k, v in desc.raw.items() if k not in ("model_type", "architectures", "transformers_version")}
    kwargs.pop("quantization_config", None)  # counted as stored; no quantizer is run on the meta device
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cfg = AutoConfig.for_model(desc.model_type, **kwargs)
        except ValueError:
            return None
        for cls in _model_classes(desc):
            try:
                with torch.device("meta"):
                    if hasattr(cls, "from_config"):
                        return cls.from_config(cfg)
                    return cls(cfg)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
            except ImportError as exc:
                raise _missing_backend(exc, desc) from exc
    return None


def _missing_backend(exc: ImportError, desc: ModelDescription) -> Exception:
    """The MissingDependency (exit 2) for an optional package transformers needs to build this model
    (``TimmWrapperModel requires the timm library``: Gemma-3n's vision tower), naming the package; any other
    ImportError is returned as it is (a bug stays a bug)."""
    match = re.search(r"requires the (\S+) librar", str(exc))
    package = exc.name or (match.group(1) if match else None)
    if package is None:
        return exc
    return MissingDependency(
        f"transformers needs the optional package {package!r} to build {desc.name} "
        f"({desc.architecture or desc.model_type}), and it is not installed",
        hint=f"pip install {package}",
    )


def _decoder_layers(model: Any, num_layers: int) -> tuple[str, Any]:
    """(dotted path, ModuleList) of the text decoder's layers: the ModuleList of ``num_layers`` modules
    outside any tower."""
    import torch

    found = [
        (n, m)
        for n, m in model.named_modules()
        if isinstance(m, torch.nn.ModuleList) and len(m) == num_layers and not any(h in n for h in _TOWER_HINTS)
    ]
    if not found:
        raise UsageError(
            f"no decoder layer list of length {num_layers} in {type(model).__name__}",
            hint="report this model's config.json: expkit cannot find its layers",
        )
    return found[0]


def _layer_lists(model: Any, desc: ModelDescription) -> list[tuple[str, Any, tuple[Any, ...]]]:
    """(dotted path, ModuleList, the description's layers) of each stack: the text decoder's layers, or an
    encoder-decoder's encoder and decoder stacks (the ModuleLists of ``block``/``layers`` under ``encoder`` and
    ``decoder``)."""
    import torch

    if not desc.is_encoder_decoder:
        path, layers = _decoder_layers(model, desc.num_layers)
        return [(path, layers, desc.layers)]
    out = []
    for part, specs in (("encoder", desc.encoder_layers), ("decoder", desc.layers)):
        found = [
            (n, m)
            for n, m in model.named_modules()
            if isinstance(m, torch.nn.ModuleList)
            and len(m) == len(specs)
            and n.split(".")[-1] in ("block", "layers")
            and part in n.split(".")
        ]
        if not found:
            raise UsageError(
                f"no {part} layer list of length {len(specs)} in {type(model).__name__}",
                hint="report this model's config.json: expkit cannot find its layers",
            )
        out.append((found[0][0], found[0][1], specs))
    return out


def _signature(layer: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((n, tuple(p.shape)) for n, p in layer.named_parameters())


def _routed(name: str) -> bool:
    return "experts" in name.split(".")


def _group_layers(layers: Any) -> list[tuple[int, list[int]]]:
    """[(representative index, [indices])] by parameter signature, in order of first appearance."""
    groups: dict[Any, list[int]] = {}
    for i, layer in enumerate(layers):
        groups.setdefault(_signature(layer), []).append(i)
    return [(idx[0], idx) for idx in groups.values()]


def _leaf_linear_names(model: Any) -> list[str]:
    import torch

    return sorted({name.rsplit(".", 1)[-1] for name, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)})


def _check_targets(targets: tuple[str, ...], model: Any) -> None:
    if targets == (ALL_LINEAR,):
        return
    names = [n for n, _ in model.named_modules()]
    for t in targets:
        if not any(n == t or n.endswith("." + t) for n in names):
            linear = [n for n in _leaf_linear_names(model) if n != "lm_head"]
            raise UsageError(
                f"LoRA target {t!r} matches no module of the model",
                hint=f"linear modules: {', '.join(linear)} (or {ALL_LINEAR})",
            )


def _matmul_modules(layer: Any) -> set[str]:
    """Names (relative to ``layer``) of its matmul modules: every nn.Linear and every module that holds a
    fused 3-D expert weight (convolutions are not matmuls)."""
    import torch

    names = {n for n, m in layer.named_modules() if isinstance(m, torch.nn.Linear)}
    for n, p in layer.named_parameters():
        owner = n.rsplit(".", 1)[0] if "." in n else ""
        if p.dim() >= 3 and not isinstance(layer.get_submodule(owner), torch.nn.modules.conv._ConvNd):
            names.add(owner)
    return names


def _adapted_modules(layer: Any) -> set[str]:
    """Names (relative to ``layer``, peft's ``base_layer`` wrappers removed) of the modules peft wrapped."""
    from peft.tuners.lora import LoraLayer

    return {
        ".".join(part for part in n.split(".") if part != "base_layer")
        for n, m in layer.named_modules()
        if isinstance(m, LoraLayer)
    }


@dataclass(frozen=True)
class _LoraKinds:
    """What peft did on the representative layers: adapters outside the layers, and per layer kind its
    adapter parameters and which matmul modules it adapted or left out."""

    outside: int
    per_rep: list[int]
    adapted: list[tuple[str, ...]]
    left_out: list[tuple[str, ...]]


def _lora_per_kind(desc: ModelDescription, r: int, alpha: float, targets: tuple[str, ...]) -> _LoraKinds:
    """Adapters by real peft on a model that keeps one decoder layer of each kind, and the matmul modules
    of each kind it adapted or left out."""
    import torch
    from peft import LoraConfig, get_peft_model

    model = build_meta_model(desc)
    if model is None:
        raise UsageError(f"transformers cannot build model_type {desc.model_type!r}: no LoRA count")
    reps = []
    for path, layers, _ in _layer_lists(model, desc):
        stack_reps = [layers[i] for i, _ in _group_layers(layers)]
        parent = model.get_submodule(path.rsplit(".", 1)[0]) if "." in path else model
        setattr(parent, path.rsplit(".", 1)[-1], torch.nn.ModuleList(stack_reps))
        reps += stack_reps
    matmuls = [_matmul_modules(rep) for rep in reps]
    target_arg: str | list[str] = ALL_LINEAR if targets == (ALL_LINEAR,) else list(targets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            peft_model = get_peft_model(
                model,
                LoraConfig(
                    r=r,
                    lora_alpha=alpha,  # type: ignore[arg-type]
                    target_modules=target_arg,
                ),
            )  # alpha: a float is fine
        except ValueError as exc:  # peft refuses these targets on this model (Mamba's out_proj and conv1d ...)
            adaptable = sorted({n.rsplit(".", 1)[-1] for m in matmuls for n in m})
            raise UsageError(
                f"peft refuses LoRA targets {','.join(targets)} on {desc.name} (model_type {desc.model_type!r}): "
                f"{str(exc).splitlines()[0]}",
                hint=f"give --targets with modules peft accepts here; the matmul modules: {', '.join(adaptable)}",
            ) from None
    trainable, _ = peft_model.get_nb_trainable_parameters()
    per_rep = [sum(p.numel() for p in rep.parameters() if p.requires_grad) for rep in reps]
    adapted = [_adapted_modules(rep) for rep in reps]
    return _LoraKinds(
        outside=trainable - sum(per_rep),
        per_rep=per_rep,
        adapted=[tuple(sorted(a)) for a in adapted],
        left_out=[tuple(sorted(m - a)) for m, a in zip(matmuls, adapted, strict=True)],
    )


def _layer_kinds(
    desc: ModelDescription, stacks: list[tuple[str, Any, tuple[Any, ...]]], lora: _LoraKinds
) -> list[LayerKindCount]:
    """One LayerKindCount per group of identical layers of each stack, with its active and adapter
    parameters (an encoder's kinds are labelled ``encoder``)."""
    kinds = []
    groups = [(layers, specs, rep, idx) for _, layers, specs in stacks for rep, idx in _group_layers(layers)]
    for (layers, specs, rep, idx), adapters, adapted, left_out in zip(
        groups, lora.per_rep, lora.adapted, lora.left_out, strict=True
    ):
        layer = layers[rep]
        params = sum(p.numel() for p in layer.parameters())
        routed = sum(p.numel() for n, p in layer.named_parameters() if _routed(n))
        spec = specs[rep]
        kinds.append(
            LayerKindCount(
                label=spec.label,
                layers=len(idx),
                params_per_layer=params,
                active_params_per_layer=params - routed + spec.mlp.active_routed(routed),
                routed_expert_params_per_layer=routed,
                adapter_params_per_layer=adapters,
                matmul_params_per_layer=sum(p.numel() for p in layer.parameters() if p.dim() >= 2),
                lora_adapted=adapted,
                lora_left_out=left_out,
            )
        )
    return kinds


# Counts kept per (description digest, LoRA settings): the ledger, its report and `sft params` ask several times
# per command, and a meta-device build costs seconds on a large model.
COUNT_CACHE_SIZE = 64
_COUNTS: OrderedDict[tuple[object, ...], ParameterCount | None] = OrderedDict()


def _count_cached(
    desc: ModelDescription, r: int | None, alpha: float | None, targets: tuple[str, ...]
) -> ParameterCount | None:
    """``_count`` of ``desc``, kept by its digest (a description without one is counted every time)."""
    key = (desc.digest, desc.source.startswith("catalog:"), r, alpha, targets)
    if desc.digest and key in _COUNTS:
        _COUNTS.move_to_end(key)
        return _COUNTS[key]
    counted = _count(desc, r, alpha, targets)
    if desc.digest:
        _COUNTS[key] = counted
        while len(_COUNTS) > COUNT_CACHE_SIZE:
            _COUNTS.popitem(last=False)
    return counted


def _count(
    desc: ModelDescription, r: int | None, alpha: float | None, targets: tuple[str, ...]
) -> ParameterCount | None:
    """Count ``desc`` on the meta device (None when transformers lacks its class)."""
    name = desc.name
    model = build_meta_model(desc)
    if model is None:
        return None
    total = sum(p.numel() for p in model.parameters())  # parameters() de-duplicates tied weights
    embed_mod = model.get_input_embeddings()
    embed = embed_mod.weight.numel()
    out = model.get_output_embeddings()
    tied = out is not None and out.weight is embed_mod.weight
    lm_head = 0 if (out is None or tied) else out.weight.numel()
    head_matmul = 0 if out is None else out.weight.numel()
    stacks = _layer_lists(model, desc)
    tower = 0
    if not desc.is_encoder_decoder:  # an encoder-decoder's encoder is its text model's, not a tower
        path = stacks[0][0]
        text_root = model.get_submodule(path.rsplit(".", 1)[0]) if "." in path else model
        tower = total - sum(p.numel() for p in text_root.parameters()) - lm_head
        if embed_mod.weight not in set(text_root.parameters()):
            tower -= embed
    decoder = sum(p.numel() for _, layers, _ in stacks for p in layers.parameters())
    other = total - tower - decoder - embed - lm_head
    n_groups = sum(len(_group_layers(layers)) for _, layers, _ in stacks)
    lora = _LoraKinds(0, [0] * n_groups, [()] * n_groups, [()] * n_groups)
    if r is not None:
        _check_targets(targets, model)
        lora = _lora_per_kind(desc, r, alpha if alpha is not None else 2.0 * r, targets)
    kinds = _layer_kinds(desc, stacks, lora)
    active = sum(k.active_params_per_layer * k.layers for k in kinds) + other + head_matmul
    # layers that reuse one stored block (Zamba2's shared transformer blocks) count it once: the kinds times
    # their layers count it at every use, ModuleList.parameters() once (0 for a model without tied layers)
    active -= sum(k.params_per_layer * k.layers for k in kinds) - decoder
    adapters_total = lora.outside + sum(k.adapter_params_per_layer * k.layers for k in kinds)
    return ParameterCount(
        model=name,
        **training_fields(total, adapters_total, r, alpha, targets),
        embedding_params=embed,
        lm_head_params=lm_head,
        per_layer_params=kinds[0].params_per_layer if kinds else 0,
        num_layers=desc.num_layers,
        tied_embeddings=tied,
        counted_by=(
            f"meta-device {type(model).__name__} (transformers, ties kept); "
            + (
                f"LoRA by peft on one layer of each of the {len(kinds)} kind(s), times its layer count"
                if r is not None
                else "no adapters"
            )
        ),
        linear_module_names=tuple(_leaf_linear_names(model)),
        active_params=active,
        active_params_with_embedding=active + (0 if tied else embed),
        tower_params=tower,
        head_matmul_params=head_matmul,
        decoder_layer_params=decoder,
        other_params=other,
        model_class=type(model).__name__,
        layer_kinds=tuple(kinds),
        approximations=desc.approximations,
    )


def count_model(
    desc: ModelDescription,
    *,
    lora_r: int | None = None,
    lora_alpha: float | None = None,
    lora_targets: tuple[str, ...] = (ALL_LINEAR,),
) -> ParameterCount | None:
    """Exact counts of ``desc`` (None when transformers does not know its model_type).

    Args:
        desc: the model description.
        lora_r: LoRA rank (None: no adapters); lora_alpha: recorded only (default 2 * r);
        lora_targets: ``("all-linear",)`` (peft's: every nn.Linear but the output head, as the installed peft
            treats fused experts) or names.

    Raises:
        UsageError: a LoRA target that matches no module (lists the model's linear modules).

    Example:
        >>> from expkit.models import load_model_description
        >>> c = count_model(load_model_description("mixtral-8x7b"))
        >>> c.total_params, round(c.active_params_with_embedding / 1e9, 1)
        (46702792704, 12.9)
    """
    counted = _count_cached(desc, lora_r, lora_alpha, tuple(lora_targets))
    # one count serves every copy of the config: its name and the notes of the description as read stay
    return None if counted is None else replace(counted, model=desc.name, approximations=desc.approximations)
