"""Packing keeps the masks: the same tokens trained per conversation with and without packing (expkit's BFD and
TRL's), position ids restarting at every conversation boundary."""

from __future__ import annotations

from collections import Counter

import pytest
from families.catalog import build_tokenizer, conversations, trl_template_dir

from expkit.errors import UsageError
from expkit.finetune.chatdata import generate_chat_examples
from expkit.finetune.conventions import render_template
from expkit.finetune.labels import IGNORE, ExampleLabels, LabelBuilder
from expkit.finetune.packing import pack_labelled, trained_tokens_per_conversation


@pytest.fixture(scope="module")
def labelled() -> list[ExampleLabels]:
    """40 synthetic conversations (1-3 turns, with and without system) labelled with a Gemma 3 tokenizer."""
    template = (trl_template_dir() / "gemma3.jinja").read_text()
    texts = [render_template(template, m) for k, m in conversations().items() if k != "tool call"]
    tok = build_tokenizer(template, texts, eos="<end_of_turn>")
    builder = LabelBuilder(tok)
    return [builder.build(ex, index=i) for i, ex in enumerate(generate_chat_examples(n=40, seed=3))]


def _unpacked(labelled: list[ExampleLabels]) -> dict[int, list[int]]:
    return {e.index: sorted(t for t, x in zip(e.input_ids, e.labels, strict=True) if x != IGNORE) for e in labelled}


def test_packing_trains_the_same_tokens_per_conversation(labelled):
    longest = max(len(e.input_ids) for e in labelled)
    rows = pack_labelled(labelled, max_length=3 * longest)
    assert len(rows) < len(labelled)  # it did pack (several conversations per row)
    assert sorted(i for r in rows for i in r.examples) == list(range(len(labelled)))
    assert trained_tokens_per_conversation(rows) == _unpacked(labelled)
    for row in rows:
        assert len(row.input_ids) <= 3 * longest
        starts = [k for k, p in enumerate(row.position_ids) if p == 0]
        assert starts == [sum(row.seq_lengths[:j]) for j in range(len(row.seq_lengths))]  # reset at each boundary
        assert all(row.labels[k] == IGNORE for k in starts)


def test_trls_bfd_packing_keeps_expkits_labels(labelled):
    """TRL's pack_dataset (bfd) and its padding-free collator on expkit's input_ids + labels."""
    from datasets import Dataset
    from trl import pack_dataset
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    longest = max(len(e.input_ids) for e in labelled)
    ds = Dataset.from_dict(
        {"input_ids": [list(e.input_ids) for e in labelled], "labels": [list(e.labels) for e in labelled]}
    )
    packed = pack_dataset(ds, seq_length=3 * longest, strategy="bfd")
    assert len(packed) < len(labelled)
    collate = DataCollatorForLanguageModeling(pad_token_id=0, padding_free=True)
    per_conversation: Counter[tuple[int, ...]] = Counter()
    for row in packed:
        batch = collate([row])
        ids, labels, pos = (batch[k][0].tolist() for k in ("input_ids", "labels", "position_ids"))
        start = 0
        for n in row["seq_lengths"]:
            assert pos[start : start + n] == list(range(n))  # position ids do not cross the boundary
            per_conversation[tuple(sorted(ids[k] for k in range(start, start + n) if labels[k] != IGNORE))] += 1
            start += n
    assert per_conversation == Counter(tuple(v) for v in _unpacked(labelled).values())


def test_a_conversation_longer_than_a_row_is_refused(labelled):
    with pytest.raises(UsageError, match=r"conversation \d+ has \d+ tokens > max_length 4"):
        pack_labelled(labelled, max_length=4)


def test_packed_attention_does_not_cross_conversations(demo_model_dir):
    """The demo model (Qwen2 architecture, sdpa) on a packed row with restarted position ids gives each
    conversation the logits it gets alone: transformers builds a block-diagonal mask from the position ids, but
    only without a KV cache (``use_cache=False``, as training runs it); with one, attention crosses."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(demo_model_dir)
    model = AutoModelForCausalLM.from_pretrained(demo_model_dir).eval()
    builder = LabelBuilder(tok)
    a, b = (builder.build(ex) for ex in generate_chat_examples(n=2, seed=5))
    (row,) = pack_labelled([a, b], max_length=len(a.input_ids) + len(b.input_ids))
    with torch.no_grad():
        ids, pos = torch.tensor([row.input_ids]), torch.tensor([row.position_ids])
        packed = model(input_ids=ids, position_ids=pos, use_cache=False).logits[0]
        crossing = model(input_ids=ids, position_ids=pos, use_cache=True).logits[0]
        alone = [model(input_ids=torch.tensor([e.input_ids])).logits[0] for e in (a, b)]
    first = row.seq_lengths[0]
    order = [a, b] if row.examples == (0, 1) else [b, a]
    expected = alone if order[0] is a else alone[::-1]
    # float32 forward of the same tokens, other batch shape: ~1e-5 (reduction order); crossing would be O(1)
    torch.testing.assert_close(packed[:first], expected[0], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(packed[first:], expected[1], atol=1e-4, rtol=1e-4)
    assert (crossing[first:] - expected[1]).abs().max() > 0.1  # the contrary case: the test can fail


def test_sft_with_packing_trains(demo_model_dir, tmp_path):
    from expkit.finetune.training import SFTSettings, train_lora_sft

    settings = SFTSettings(steps=3, batch_size=2, max_length=256, packing=True, lr_scheduler="constant")
    result = train_lora_sft(
        model_dir=demo_model_dir,
        examples=generate_chat_examples(n=24, seed=3),
        out_dir=tmp_path,
        settings=settings,
        record=False,
    )
    assert len(result.losses) == 3 and all(0 < x < 20 for x in result.losses)
    with pytest.raises(UsageError, match="packing needs max_length"):
        SFTSettings(packing=True, max_length=None).validate()
