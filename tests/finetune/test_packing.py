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
