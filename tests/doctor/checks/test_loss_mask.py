"""loss_mask: what a causal-LM loss counted, read from the labels a tiny GPT-2 (built from a config, no download)
was given and from a hand-written cross_entropy's target. Each bug draws its finding with the measured count,
the same batch masked right draws none."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from source_lines import line_of as _line  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

V, EOS, PAD = 40, 1, 0
LENGTHS = (12, 9, 7, 12, 5, 10)  # real tokens per row, the last of them the eos; the rest is padding


def _batch(pad=PAD):
    g = torch.Generator().manual_seed(0)
    ids = torch.full((len(LENGTHS), max(LENGTHS)), pad)
    mask = torch.zeros_like(ids)
    for r, n in enumerate(LENGTHS):
        ids[r, : n - 1] = torch.randint(3, V, (n - 1,), generator=g)
        ids[r, n - 1] = EOS
        mask[r, :n] = 1
    return ids, mask


def _hf(labels_of, *, pad=PAD, shift_inputs=False, with_mask=True):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=V, n_positions=16, n_embd=16, n_layer=1, n_head=2, eos_token_id=EOS, pad_token_id=pad)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ids, mask = _batch(pad)
    labels = labels_of(ids, mask)  # the labels
    if shift_inputs:
        ids, mask = ids[:, :-1], mask[:, :-1]
    with watch(model, opt, steps=1) as w:
        loss = model(input_ids=ids, attention_mask=mask if with_mask else None, labels=labels).loss
        opt.zero_grad()
        if torch.isfinite(loss):
            loss.backward()
        opt.step()
    assert not w.check_errors, w.check_errors
    return {f.check: f for f in w.findings}


def _right(ids, mask):
    return ids.masked_fill(mask == 0, -100)


def test_pad_positions_in_the_labels_are_counted_and_masked_ones_are_not():
    found = _hf(lambda ids, mask: ids.clone())
    f = found["pad_in_loss"]
    pads = sum(max(LENGTHS) - n for n in LENGTHS)  # right padding: no pad sits in column 0, which is never a target
    assert f.evidence["pad_positions_trained"] == pads and f.evidence["from_attention_mask"] is True
    assert f.evidence["label_positions"] == len(LENGTHS) * (max(LENGTHS) - 1)
    assert f"{pads} of" in f.message and f.fix
    # named where the labels handed to the model (labels=labels) were chosen (batch14 dev
    # t5_seq2seq_labels_keep_pad_ids and batch15 dev t5_labels_padding_not_ignored: labels = tgt)
    lines, first = inspect.getsourcelines(_hf)
    assert f.line == first + next(i for i, text in enumerate(lines) if "# the labels" in text)
    assert _hf(_right) == {}


def test_labels_shifted_by_hand_and_again_by_the_model():
    f = _hf(lambda ids, mask: ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100), shift_inputs=True)
    assert set(f) == {"labels_shifted_twice"}  # the pad and stop rules are not applied to misaligned labels
    # named where the labels given to the model were made, not at the model's call
    lines, first = inspect.getsourcelines(_hf)
    assert f["labels_shifted_twice"].line == first + next(i for i, t in enumerate(lines) if "labels = labels_of(" in t)
    assert f["labels_shifted_twice"].evidence["equal_to_next_token"] == pytest.approx(1.0)
    # compared: label t (t >= 1: the model never uses label 0) against input token t + 1, in the 11 - 1 columns
    # that have a next token; a row of n tokens has n - 1 labels trained, the first at t = 0
    assert f["labels_shifted_twice"].evidence["trained_labels"] == sum(min(n - 2, max(LENGTHS) - 3) for n in LENGTHS)


def test_stop_token_masked_when_pad_is_the_eos_and_padding_is_masked_by_id():
    f = _hf(lambda ids, mask: ids.masked_fill(ids == EOS, -100), pad=EOS)
    g = f["eos_masked"]
    assert set(f) == {"eos_masked"}
    assert g.evidence["rows_with_masked_stop"] == len(LENGTHS) == g.evidence["rows_only_stop_masked"]
    assert "pad_token_id 1 is the stop token" in g.message
    # named where the pad was made the stop token (here the first `pad=EOS` of this file), not the forward
    assert g.file == __file__ and "pad=EOS" in Path(__file__).read_text().splitlines()[g.line - 1]
    assert _hf(_right, pad=EOS) == {}  # masked by the attention mask: the real eos stays trained
    # no attention_mask given: the padding is the trailing run of the pad (= eos) id, its first token the real eos
    assert set(_hf(lambda ids, mask: ids.masked_fill(ids == EOS, -100), pad=EOS, with_mask=False)) == {"eos_masked"}
    assert _hf(_right, pad=EOS, with_mask=False) == {}


def test_inverted_mask_trains_the_prompt_and_masks_the_answer():
    def inverted(ids, mask):
        labels = ids.clone()
        for r, n in enumerate(LENGTHS):
            labels[r, n // 2 :] = -100  # the answer (second half) and the padding masked, the prompt trained
        return labels

    f = _hf(inverted)
    assert set(f) == {"answer_masked"} and f["answer_masked"].evidence["rows_with_masked_stop"] == len(LENGTHS)
    lines, first = inspect.getsourcelines(_hf)  # named where the labels given to the model were made
    assert f["answer_masked"].line == first + next(i for i, t in enumerate(lines) if "labels = labels_of(" in t)

    def prompt_masked(ids, mask):
        labels = _right(ids, mask)
        for r, n in enumerate(LENGTHS):
            labels[r, : n // 2] = -100
        return labels

    assert _hf(prompt_masked) == {}


def test_nothing_trained():
    f = _hf(lambda ids, mask: torch.full_like(ids, -100))
    # no gradient at all, so step_update also reports the step that changed nothing
    assert f["no_trained_label"].evidence["trained_positions"] == 0 and "pad_in_loss" not in f


def test_hand_written_loss_counting_padding_without_a_pad_id():
    """A plain embedding LM (no config, so no pad id): the padding is read as a trailing run of one id that
    occurs nowhere else; the same loop with ignore_index on it is clean."""
    ids, mask = _batch(pad=PAD)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(V, 16), nn.Linear(16, V))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for masked in (False, True):
        with watch(model, opt, steps=1) as w:
            x, y = ids[:, :-1], ids[:, 1:]
            if masked:
                y = y.masked_fill(mask[:, 1:] == 0, -100)
            loss = nn.functional.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert not w.check_errors
        found = {f.check: f for f in w.findings}
        if masked:
            assert "pad_in_loss" not in found
        else:
            # rows padded by >= 2: the first pad of each run is given the benefit of the doubt (it may be a stop)
            runs = [max(LENGTHS) - n for n in LENGTHS if max(LENGTHS) - n >= 2]
            assert found["pad_in_loss"].evidence["pad_positions_trained"] == sum(r - 1 for r in runs)


def _preshifted(ids):
    labels = torch.full_like(ids, -100)
    labels[:, :-1] = ids[:, 1:]  # shifted by hand
    return labels


def test_labels_shifted_by_hand_in_the_training_loop_are_named_at_the_write():
    """The labels are made in the loop (not a collate_fn) by writing the next tokens into a -100 tensor; the model
    shifts them again. The write line is the labels' own (a gpt2 prompt-tuning report's pattern, batch 12)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=V, n_positions=16, n_embd=16, n_layer=1, n_head=2, eos_token_id=EOS, pad_token_id=PAD)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with watch(model, opt, steps=1) as w:
        ids = torch.randint(3, V, (6, 12))
        loss = model(input_ids=ids, labels=_preshifted(ids)).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert not w.check_errors, w.check_errors
    (f,) = [f for f in w.findings if f.check == "labels_shifted_twice"]
    assert f.line == _line("# shifted by hand", _preshifted)


def test_padding_counted_through_a_loss_module_is_named_where_the_module_was_built():
    """nn.CrossEntropyLoss() built without the pad's ignore_index (a causal LM's padded next tokens): the line
    to change is the criterion's construction, not the call."""
    ids, _ = _batch(pad=PAD)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(V, 16), nn.Linear(16, V))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with watch(model, opt, steps=1) as w:
        criterion = nn.CrossEntropyLoss()  # built without ignore_index
        loss = criterion(model(ids[:, :-1]).reshape(-1, V), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert not w.check_errors, w.check_errors
    (f,) = [f for f in w.findings if f.check == "pad_in_loss"]
    assert f.line == _line(
        "# built without ignore_index", test_padding_counted_through_a_loss_module_is_named_where_the_module_was_built
    )


def test_a_token_tagger_whose_tag_zero_is_the_pad_id_is_not_counting_padding():
    """Token classification (the HF Trainer's compute_loss_func pattern, the HF blog on gradient accumulation:
    https://huggingface.co/blog/gradient_accumulation): the targets are 3 tags, tag 0 equal to the pad id 0, the
    padding labelled -100. Three classes cannot hold the input's tokens: the targets are not tokens."""
    from transformers import BertConfig, BertForTokenClassification

    ids, mask = _batch(pad=PAD)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=16, num_labels=3, pad_token_id=PAD,
    )  # fmt: skip
    model = BertForTokenClassification(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    tags = ((ids + 2) % 3).masked_fill(mask == 0, -100)  # every row's last real tag (the eos's) is 0, the pad id
    with watch(model, opt, steps=1) as w:
        logits = model(input_ids=ids, attention_mask=mask).logits
        loss = nn.functional.cross_entropy(logits.reshape(-1, 3), tags.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert not w.check_errors, w.check_errors
    assert "pad_in_loss" not in {f.check for f in w.findings}


def test_hand_written_loss_of_an_lm_written_as_separate_modules_counts_padding():
    """Embedding, GRU and head called one after the other (each a top-level forward): the token ids are those of
    the embedding's call, kept through the float forwards after it (an outside program's case: batch 7,
    the pad id defined and never passed as ignore_index)."""
    ids, mask = _batch(pad=PAD)
    torch.manual_seed(0)
    emb, rnn, head = nn.Embedding(V, 16), nn.GRU(16, 16, batch_first=True), nn.Linear(16, V)
    opt = torch.optim.SGD([*emb.parameters(), *rnn.parameters(), *head.parameters()], lr=0.01)
    for masked in (False, True):
        with watch(steps=1) as w:
            x, y = ids[:, :-1], ids[:, 1:]
            if masked:
                y = y.masked_fill(mask[:, 1:] == 0, -100)
            h, _ = rnn(emb(x))
            loss = nn.functional.cross_entropy(head(h).reshape(-1, V), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert not w.check_errors
        assert ("pad_in_loss" in {f.check for f in w.findings}) is not masked


def test_hand_written_loss_on_an_hf_model_with_next_token_targets_from_the_data():
    """x = seq[:-1], y = seq[1:] (the targets already next-token): the label at the input's last real position is
    the first pad (masked) and must not read as a masked eos; masking the eos by id must."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=V, n_positions=16, n_embd=16, n_layer=1, n_head=2, eos_token_id=EOS, pad_token_id=EOS)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    seq, mask = _batch(pad=EOS)
    for eos_masked in (False, True):
        y = (
            seq[:, 1:].masked_fill(seq[:, 1:] == EOS, -100)
            if eos_masked
            else seq[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
        )
        with watch(model, opt, steps=1) as w:
            logits = model(input_ids=seq[:, :-1], attention_mask=mask[:, :-1]).logits
            loss = nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert not w.check_errors, w.check_errors
        found = {f.check for f in w.findings}
        assert found == ({"eos_masked"} if eos_masked else set()), found


def test_hand_written_loss_that_shifts_next_token_targets_again():
    """The data gives y = seq[1:] and the loss compares logits[:, :-1] with y[:, 1:]: token t is trained on
    token t + 2. Shifting once (either way) is clean."""
    torch.manual_seed(0)
    seq = torch.randint(0, V, (8, 17))
    model = nn.Sequential(nn.Embedding(V, 16), nn.Linear(16, V))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for twice in (False, True):
        with watch(model, opt, steps=1) as w:
            x, y = seq[:, :-1], seq[:, 1:]
            logits = model(x)
            if twice:
                loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), y[:, 1:].reshape(-1))
            else:
                loss = nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert not w.check_errors, w.check_errors
        found = {f.check: f for f in w.findings}
        if not twice:
            assert found == {}
            continue
        f = found["labels_shifted_twice"]
        assert f.evidence["equal_to_token_two_ahead"] == 1.0 and f.evidence["trained_labels"] == 8 * 14


# pad_in_loss names the line that made the labels (a collate_fn's copy of the ids)


def _collate_labels_copied(rows):
    ids = torch.stack([r[0] for r in rows])
    mask = torch.stack([r[1] for r in rows])
    labels = ids.clone()  # the copy
    return ids, mask, labels


def _collate_wrong_id_masked(rows):
    ids = torch.stack([r[0] for r in rows])
    mask = torch.stack([r[1] for r in rows])
    labels = ids.masked_fill(ids == EOS, -100)  # the wrong id
    return ids, mask, labels


def _collate_filled_then_written(rows):
    # the outside development program batch17/bugs/t5_reverse_digits_trainer.py (from
    # https://github.com/huggingface/transformers/issues/6238): a tensor filled with the pad id, each row's tokens
    # written in; the pad positions keep the fill's value
    ids = torch.stack([r[0] for r in rows])
    mask = torch.stack([r[1] for r in rows])
    labels = torch.full_like(ids, PAD)  # the fill
    for i in range(len(rows)):
        n = int(mask[i].sum())
        labels[i, :n] = ids[i, :n]
    return ids, mask, labels


def _collate_right(rows):
    ids = torch.stack([r[0] for r in rows])
    mask = torch.stack([r[1] for r in rows])
    return ids, mask, ids.masked_fill(mask == 0, -100)


def _loader_run(collate, *, hf: bool):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    ids, mask = _batch()
    loader = torch.utils.data.DataLoader(list(zip(ids, mask, strict=True)), batch_size=3, collate_fn=collate)
    if hf:
        cfg = GPT2Config(
            vocab_size=V, n_positions=16, n_embd=16, n_layer=1, n_head=2, eos_token_id=EOS, pad_token_id=PAD
        )
        model = GPT2LMHeadModel(cfg)
    else:
        model = nn.Sequential(nn.Embedding(V, 16), nn.Linear(16, V))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with watch(model, opt, steps=2) as w:
        for x, m, labels in loader:
            if hf:
                loss = model(input_ids=x, attention_mask=m, labels=labels).loss
            else:
                logits = model(x)
                loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "pad_in_loss"]


def _at(marker, fn):
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def test_pad_in_loss_is_named_where_the_collate_fn_made_the_labels():
    found = _loader_run(_collate_labels_copied, hf=True)
    assert found and found[0].line == _at("# the copy", _collate_labels_copied)
    found = _loader_run(_collate_wrong_id_masked, hf=True)
    assert found and found[0].line == _at("# the wrong id", _collate_wrong_id_masked)
    found = _loader_run(_collate_filled_then_written, hf=True)
    assert found and found[0].line == _at("# the fill", _collate_filled_then_written)
    assert _loader_run(_collate_right, hf=True) == []


def test_pad_in_loss_of_a_hand_written_loss_is_named_where_the_labels_were_made():
    found = _loader_run(_collate_labels_copied, hf=False)
    assert found and found[0].line == _at("# the copy", _collate_labels_copied)
    assert _loader_run(_collate_right, hf=False) == []


def _collated(pad_is_eos: bool):
    """A GPT-2 whose config keeps its class defaults (eos 50256, outside a vocabulary of 32): the stop id is the
    tokenizer's, and DataCollatorForLanguageModeling masks every pad id in the labels."""
    import gc

    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    gc.collect()
    # another live tokenizer (another test's, or the program's own second one) with another vocabulary: the check
    # reads the one whose vocabulary is the model's
    other = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"<unk>": 0, "<s>": 1}, unk_token="<unk>")), eos_token="<s>"
    )
    words = ["<eos>", "<unk>", "<pad>"] + [f"w{i}" for i in range(29)]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<eos>", unk_token="<unk>", pad_token="<pad>")
    if pad_is_eos:
        tok.pad_token = tok.eos_token
    collator = DataCollatorForLanguageModeling(tokenizer=tok, mlm=False)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=len(words), n_positions=16))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with watch(model, opt, steps=1) as w:
        texts = [" ".join(f"w{(i + j) % 29}" for j in range(3 + i % 4)) + " <eos>" for i in range(4)]
        batch = collator([{"input_ids": tok(t)["input_ids"]} for t in texts])
        loss = model(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert not w.check_errors, w.check_errors
    assert other.eos_token_id == 1  # alive until here
    return {f.check: f for f in w.findings}


def test_the_stop_id_comes_from_the_tokenizer_when_the_config_keeps_its_defaults():
    pytest.importorskip("transformers")
    found = _collated(pad_is_eos=True)
    assert set(found) == {"eos_masked"} and found["eos_masked"].evidence["stop_token_ids"] == [0]
    assert _collated(pad_is_eos=False) == {}  # a pad of its own: the real eos stays trained


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("tok.pad_token = tok.eos_token\n", 1),
        ("x = 1\nPAD = EOS\n", 2),
        ("cfg = Config(\n    n=2,\n    pad_token_id=cfg.eos_token_id,\n)\n", 3),
        ("x = 1\ntok.add_special_tokens({'pad_token': tok.eos_token})\n", 2),
        ("tok.pad_token = '<pad>'\nPAD = 0\n", None),
    ],
)
def test_the_line_that_makes_the_pad_the_eos_is_found_in_the_source(tmp_path, source, line):
    from expkit.doctor.findings import assigned_from

    path = tmp_path / "prog.py"
    path.write_text(source)
    assert assigned_from(str(path), "pad", "eos") == line


def _mlm(how: str):
    """A tiny BERT masked LM: 15 % of the tokens hidden ([MASK], or with ``80_10_10`` BERT's 80/10/10 split: a
    tenth of the trained positions keep their own token); the labels keep only those positions, or all of them."""
    cfg = transformers.BertConfig(
        vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    torch.manual_seed(0)
    model = transformers.BertForMaskedLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            ids = torch.randint(3, V, (8, 16))
            hidden = torch.rand(ids.shape) < 0.15
            inputs = ids.masked_fill(hidden, 2)
            if how == "80_10_10":
                keep = hidden & (torch.rand(ids.shape) < 0.2)
                inputs = torch.where(keep, ids, inputs)
            labels = ids.masked_fill(~hidden, -100)
            if how == "all":
                labels = ids.clone()  # the labels
            out = model(input_ids=inputs, labels=labels)
            opt.zero_grad()
            out.loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "masked_lm_trains_visible_tokens"]


def test_a_masked_lm_trained_on_every_token_is_found_where_the_labels_were_made():
    (f,) = _mlm("all")
    assert f.line == _line("# the labels", _mlm) and f.evidence["equal_to_visible_input"] > 0.7


@pytest.mark.parametrize("how", ["masked_only", "80_10_10"])
def test_a_masked_lm_trained_on_its_hidden_positions_is_silent(how):
    assert _mlm(how) == []


@pytest.mark.parametrize("masked", [False, True])
def test_an_encoder_decoders_labels_padded_with_the_pad_id_are_counted(masked):
    # the outside development program batch14/bugs/t5_seq2seq_labels_keep_pad_ids.py: a T5 trained with labels
    # padded with pad_token_id (0), which its loss (ignore_index=-100) trains; set to -100 they are not counted
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.T5Config(
        vocab_size=24, d_model=16, d_ff=32, d_kv=8, num_layers=1, num_heads=2, pad_token_id=0, eos_token_id=1,
        decoder_start_token_id=0,
    )  # fmt: skip
    model = transformers.T5ForConditionalGeneration(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            src = torch.randint(2, 24, (6, 8))
            tgt = torch.zeros(6, 8, dtype=torch.long)
            tgt[:, :4] = torch.randint(2, 24, (6, 4))
            tgt[:, 4] = 1
            labels = tgt.masked_fill(tgt == 0, -100) if masked else tgt
            loss = model(input_ids=src, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors, w.check_errors
    found = [f for f in w.findings if f.check == "pad_in_loss"]
    assert found == [] if masked else (len(found) == 1 and found[0].evidence["pad_positions_trained"] == 18)
