"""Adapters for the tools users already run: Hugging Face Trainer and Lightning (training runs into
the run store), lm-evaluation-harness and Inspect (eval logs into per-item results). Each submodule
imports its library lazily; nothing is imported here."""
