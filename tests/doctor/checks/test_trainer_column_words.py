"""trainer_dropped_asked_column pairs a column the Trainer dropped with an optional forward argument no forward
received when their names share a word. Words every tokenizer output shares say nothing: the outside clean program
batch17/clean/bert_mlm_wordlevel_trainer.py (from https://github.com/huggingface/transformers/issues/16711) keeps
``special_tokens_mask`` in its rows, the Trainer drops it, DataCollatorForLanguageModeling recomputes it, and
BertForMaskedLM's ``token_type_ids`` (never given) was no column's target."""

from __future__ import annotations

from expkit.doctor.checks.trainer_columns import _words


def test_columns_sharing_only_tokenizer_words_with_an_argument_are_not_paired():
    assert _words("special_tokens_mask") & _words("token_type_ids") == set()


def test_columns_sharing_a_real_word_with_an_argument_are_paired():
    assert _words("sample_weights") & _words("sample_weight") == {"sample", "weight"}
    assert _words("side_features") & _words("side_feature_ids") == {"side", "feature"}
