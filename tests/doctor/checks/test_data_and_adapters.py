"""gradient_cut on a module called under no_grad outside any forward, trainable_not_updated leaving model inputs
alone, batches_single_class, adapter_in_inference_mode and padding_changes_output: each on a small in-process
loop under watch(), with its correct twin (which must stay silent)."""

from __future__ import annotations

import tempfile

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _found(w, check):
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == check]


def _encoder_loop(no_grad: bool):
    torch.manual_seed(0)
    encoder, head = nn.Linear(8, 16), nn.Linear(16, 2)
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3)
    X, y = torch.randn(96, 8), torch.randint(0, 2, (96,))
    with watch(head, opt, steps=2) as w:
        for i in range(3):
            if no_grad:
                with torch.no_grad():
                    h = encoder(X[32 * i : 32 * i + 32])
            else:
                h = encoder(X[32 * i : 32 * i + 32])
            loss = F.cross_entropy(head(h), y[32 * i : 32 * i + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w, "gradient_cut")


def test_encoder_called_under_no_grad_in_the_loop_is_a_gradient_cut():
    (f,) = _encoder_loop(no_grad=True)
    assert "no_grad" in f.message
    assert _encoder_loop(no_grad=False) == []


class _Checkpointed(nn.Module):
    """A block run through a checkpoint or a custom autograd Function: its forward runs with grad disabled but
    no ``torch.no_grad()`` is entered there (the last one entered closed long before, in weight init)."""

    def __init__(self, how: str):
        super().__init__()
        self.block, self.head, self.how = nn.Sequential(nn.Linear(8, 16), nn.ReLU()), nn.Linear(16, 2), how

    def forward(self, x):
        if self.how == "reentrant":
            h = torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=True)  # CUT
        elif self.how == "function":
            h = _RunBlock.apply(x, self.block)  # CUT
        else:
            h = torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)
        return self.head(h)


class _RunBlock(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, block):
        return block(x)  # CUT: grad is off in an autograd Function's forward, block's weights get no gradient

    @staticmethod
    def backward(ctx, grad):
        return grad.sum(-1, keepdim=True).expand(grad.shape[0], 8), None


@pytest.mark.parametrize("how", ["reentrant", "function", "non_reentrant"])
def test_a_block_run_with_grad_disabled_is_named_at_its_call_not_a_stale_no_grad(how):
    import inspect

    torch.manual_seed(0)
    model = _Checkpointed(how)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))  # the input needs no grad: reentrant's known trap
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    found = _found(w, "gradient_cut")
    if how == "non_reentrant":
        assert found == []  # the block trains: not a cut
        return
    (f,) = found
    # the user's call of checkpoint()/apply(), outside the autograd Function torch ran the block in (outside
    # development program batch13/bugs/peft_lora_custom_checkpoint_frozen_inputs.py), not a layer inside it
    lines, start = inspect.getsourcelines(_Checkpointed.forward)
    cut = {start + i for i, text in enumerate(lines) if "# CUT" in text}
    assert f.line in cut and "grad disabled" in f.message


def test_a_model_input_that_requires_grad_is_not_an_unoptimised_weight():
    # a gradient penalty's interpolates: a leaf fed to the model, differentiated with autograd.grad
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
    with watch(critic, opt, steps=2) as w:
        for _ in range(3):
            mix = torch.randn(16, 2).requires_grad_(True)
            (grad,) = torch.autograd.grad(critic(mix).sum(), mix, create_graph=True)
            loss = critic(torch.randn(16, 2)).mean() + ((grad.norm(dim=1) - 1) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert _found(w, "trainable_not_updated") == []


@pytest.mark.parametrize("in_the_model", [False, True])
def test_a_hand_check_of_a_custom_gradient_before_training_is_not_an_unoptimised_weight(in_the_model):
    # the outside development program batch19/clean/straight_through_quantizer_autograd_function.py (from
    # https://github.com/pytorch/pytorch/issues/4714): a straight-through Function's backward checked by hand on a
    # leaf before the first step, a backward that reaches no weight of any module or optimizer; the same leaf
    # used inside the trained model is a weight no optimizer holds
    class RoundSTE(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return torch.round(x)

        @staticmethod
        def backward(ctx, grad):
            return grad

    torch.manual_seed(0)
    probe = torch.tensor([-0.4, 0.2, 0.9], requires_grad=True)
    model = nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        (RoundSTE.apply(probe * 1.0) * torch.arange(1.0, 4.0)).sum().backward()
        for _ in range(3):
            x = torch.randn(16, 3)
            loss = F.cross_entropy(model(RoundSTE.apply(x * probe if in_the_model else x)), torch.randint(0, 2, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    found = _found(w, "trainable_not_updated")
    assert [f.evidence["shapes"] for f in found] == ([[[3]]] if in_the_model else [])


@pytest.mark.parametrize("loose", [False, True])
def test_a_frozen_layers_output_made_to_require_grad_is_not_an_unoptimised_weight(loose):
    # transformers' enable_input_require_grads: a forward hook marks the frozen embedding's output as requiring
    # grad, so reentrant checkpointing reaches the adapters (the outside development program batch18/clean/
    # peft_lora_reentrant_checkpointing_input_grads.py, from https://github.com/axolotl-ai-cloud/axolotl/issues/312);
    # a plain tensor attribute that requires grad beside it is still a weight no optimizer holds
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.head = nn.Embedding(20, 8), nn.Linear(8, 2)
            self.emb.weight.requires_grad_(False)
            self.emb.register_forward_hook(lambda module, inputs, output: output.requires_grad_(True))
            self.scale = torch.ones(8, requires_grad=True) if loose else None

        def forward(self, ids):
            h = self.emb(ids).mean(1)
            return self.head(h * self.scale if self.scale is not None else h)

    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.Adam(model.head.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randint(0, 20, (16, 5))), torch.randint(0, 2, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    found = _found(w, "trainable_not_updated")
    assert [f.evidence["shapes"] for f in found] == ([[[8]]] if loose else [])


@pytest.mark.parametrize("as_keyword", [False, True])
def test_points_differentiated_with_autograd_grad_inside_the_model_input_are_not_unoptimised_weights(as_keyword):
    # a physics-informed network: the collocation points require grad and enter the model through a cat, the
    # loss takes u's derivatives with autograd.grad (torch.optim.LBFGS docs' PINN use)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    xs, ts = torch.rand(32, 1, requires_grad=True), torch.rand(32, 1, requires_grad=True)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    with watch(net, opt, steps=2) as w:
        for _ in range(3):
            u = net(torch.cat([xs, ts], 1))
            if as_keyword:
                u_t, u_x = torch.autograd.grad(
                    outputs=u, inputs=(ts, xs), grad_outputs=torch.ones_like(u), create_graph=True
                )
            else:
                u_t, u_x = torch.autograd.grad(u, (ts, xs), torch.ones_like(u), create_graph=True)
            loss = (u_t - 0.1 * u_x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert _found(w, "trainable_not_updated") == []


def _sorted_loader(shuffle: bool, per_class: int = 64):
    torch.manual_seed(0)
    X = torch.randn(192, 6)
    y = torch.arange(192) // per_class  # classes stored in label order
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=shuffle)
    model = nn.Linear(6, int(y.max()) + 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w, "batches_single_class")


def test_label_sorted_data_read_in_order_is_found_and_shuffled_is_not():
    (f,) = _sorted_loader(shuffle=False)
    assert f.evidence["batch_classes"] == [0, 0]
    assert _sorted_loader(shuffle=True) == []


def test_label_groups_smaller_than_a_batch_read_in_order_are_found_too():
    (f,) = _sorted_loader(shuffle=False, per_class=40)  # 40 a class, 32 a batch: the second batch holds two
    assert f.evidence["batch_classes"] == [0, 0]
    assert _sorted_loader(shuffle=True, per_class=40) == []


def _adapter_loop(is_trainable: bool, *, wrapped: bool = False):
    peft = pytest.importorskip("peft")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            return self.fc(x)

    saved = tempfile.mkdtemp()
    peft.get_peft_model(Net(), peft.LoraConfig(r=2, target_modules=["fc"])).save_pretrained(saved)
    model = peft.PeftModel.from_pretrained(Net(), saved, is_trainable=is_trainable)
    head = nn.Linear(8, 2)
    if wrapped:  # the peft model as an encoder inside the user's own classifier (its forward is not a root's)
        model, head = nn.Sequential(model, head), nn.Identity()
    opt = torch.optim.SGD([p for p in [*model.parameters(), *head.parameters()] if p.requires_grad], lr=0.1)
    model.train()
    X, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
    with watch(model, opt, steps=2) as w:
        for i in range(2):
            loss = F.cross_entropy(head(model(X[32 * i : 32 * i + 32])), y[32 * i : 32 * i + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w, "adapter_in_inference_mode")


@pytest.mark.parametrize("wrapped", [False, True])
def test_adapter_loaded_for_inference_and_trained_around_is_found(wrapped):
    # wrapped: the outside development program batch16/bugs/peft_resume_adapter_from_pretrained.py (from
    # https://openillumi.com/en/en-peft-from-pretrained-get-peft-model-diff), a PeftModel encoder in a classifier
    (f,) = _adapter_loop(is_trainable=False, wrapped=wrapped)
    assert f.evidence["trainable_values"] == 0
    assert _adapter_loop(is_trainable=True, wrapped=wrapped) == []


def _padded_classifier(pass_mask: bool, mask_of_ones: bool = False, random_ids: bool = False):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=16, num_labels=2, pad_token_id=0,
    )  # fmt: skip
    model = transformers.BertForSequenceClassification(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lengths = torch.tensor([3, 8, 5, 8, 2, 6, 8, 4])
    mask = (torch.arange(8)[None, :] < lengths[:, None]).long()
    ids = torch.randint(1, 40, (8, 8)) * mask
    if mask_of_ones:
        mask = torch.ones_like(ids)  # MASK-MADE: a mask that masks nothing
    if random_ids:  # no padding at all: random ids that hit the declared pad id here and there, inside rows
        ids = torch.randint(0, 40, (8, 8), generator=torch.Generator().manual_seed(3))
        ids[0, 3] = ids[1, 7] = 0
    labels = torch.randint(0, 2, (8,))
    model.train()
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            out = model(input_ids=ids, attention_mask=mask if pass_mask else None, labels=labels)
            opt.zero_grad()
            out.loss.backward()
            opt.step()
    return _found(w, "padding_changes_output")


def test_padding_attended_without_attention_mask_is_found_and_masked_is_not():
    (f,) = _padded_classifier(pass_mask=False)
    assert f.evidence["attention_mask_given"] is False and f.evidence["rows_with_padding"] == 5  # lengths below 8
    assert _padded_classifier(pass_mask=True) == []


def test_random_ids_that_hit_the_pad_id_inside_rows_are_not_padding():
    assert _padded_classifier(pass_mask=False, random_ids=True) == []


def test_an_attention_mask_that_masks_nothing_is_named_where_it_was_made():
    import inspect

    (f,) = _padded_classifier(pass_mask=True, mask_of_ones=True)
    lines, first = inspect.getsourcelines(_padded_classifier)
    assert f.evidence["attention_mask_given"] is True
    assert f.line == first + next(i for i, text in enumerate(lines) if "MASK-MADE" in text)


class _DataCut(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.dec = nn.Linear(8, 4), nn.Linear(4, 8)

    def forward(self, x):
        return self.dec(torch.relu(self.enc(x)).data)  # the cut


def test_tensor_data_inside_a_forward_is_a_gradient_cut_named_at_its_line():
    import inspect

    torch.manual_seed(0)
    model = _DataCut()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.randn(32, 8)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.mse_loss(model(X), X)
            opt.zero_grad()
            loss.backward()
            opt.step()
    (f,) = _found(w, "gradient_cut")
    lines, first = inspect.getsourcelines(_DataCut)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the cut" in t)
    assert "data" not in torch.Tensor.__dict__  # the probe's property is gone after the watch


def _split_lm(shift: bool):
    torch.manual_seed(0)
    emb, rnn, out = nn.Embedding(20, 8), nn.GRU(8, 16, batch_first=True), nn.Linear(16, 20)
    opt = torch.optim.Adam([*emb.parameters(), *rnn.parameters(), *out.parameters()], lr=1e-3)
    seq = torch.randint(0, 20, (4, 11))
    x, y = (seq[:, :-1], seq[:, 1:]) if shift else (seq[:, :-1], seq[:, :-1])
    with watch(out, opt, steps=2) as w:
        for _ in range(2):
            h, _ = rnn(emb(x))
            loss = F.cross_entropy(out(h).reshape(-1, 20), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w, "labels_not_shifted")


def test_an_lm_written_as_separate_modules_is_checked_for_unshifted_labels():
    (f,) = _split_lm(shift=False)
    assert f.evidence["positions_equal_to_input"] == 40
    assert _split_lm(shift=True) == []


def _lora_targets(targets):
    """LoRA on a two-block net: SimpleTuner#766, a target_modules entry from another architecture."""
    peft = pytest.importorskip("peft")

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn, self.mlp = nn.Linear(8, 8), nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))

        def forward(self, x):
            return x + self.mlp(torch.relu(self.attn(x)))

    torch.manual_seed(0)
    X, y = torch.randn(64, 8), torch.randint(0, 8, (64,))
    with watch(steps=2) as w:
        model = peft.get_peft_model(nn.Sequential(Block(), Block()), peft.LoraConfig(r=2, target_modules=targets))
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
        for i in range(2):
            loss = F.cross_entropy(model(X[32 * i : 32 * i + 32]), y[32 * i : 32 * i + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w, "adapter_target_matches_nothing")


def test_a_lora_target_that_names_no_module_is_found_where_it_is_written():
    from source_lines import line_of

    targets = ["attn", "mlp.fc_in"]  # a name from another architecture
    (f,) = _lora_targets(targets)
    assert f.evidence["unmatched"] == ["mlp.fc_in"]
    assert f.line == line_of(
        "# a name from another architecture", test_a_lora_target_that_names_no_module_is_found_where_it_is_written
    )


def test_a_regex_alternative_that_names_no_module_is_found():
    from source_lines import line_of

    targets = r".*\.(attn|fc_in|fc_out)"  # two alternatives from another architecture
    (f,) = _lora_targets(targets)
    assert f.evidence["unmatched"] == ["fc_in", "fc_out"]
    assert f.line == line_of("# two alternatives from another", test_a_regex_alternative_that_names_no_module_is_found)


@pytest.mark.parametrize("targets", [["attn", "mlp.0", "2"], ["attn"], r".*\.mlp\.(0|2)", "all-linear"])
def test_lora_targets_that_all_match_regexes_and_all_linear_are_silent(targets):
    assert _lora_targets(targets) == []


def test_a_classifier_that_pools_the_last_token_before_its_pad_id_is_silent():
    # GPT-2's sequence classifier finds each row's last real token by the declared pad id: a pad id swapped for a
    # real token reads as a longer sequence, so the swap alone moved its output (outside development program
    # batch13/clean/peft_lora_seqcls_head_saved_and_merged.py, a false alarm); with the pad id kept it is still
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=40, n_embd=16, n_layer=1, n_head=2, n_positions=16, pad_token_id=0)
    cfg.num_labels = 3
    model = transformers.GPT2ForSequenceClassification(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lengths = torch.tensor([3, 8, 5, 8, 2, 6, 8, 4])
    mask = (torch.arange(8)[None, :] < lengths[:, None]).long()
    ids = torch.randint(1, 40, (8, 8)) * mask
    labels = torch.randint(0, 3, (8,))
    model.train()
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            out = model(input_ids=ids, attention_mask=mask, labels=labels)
            opt.zero_grad()
            out.loss.backward()
            opt.step()
    assert _found(w, "padding_changes_output") == []
