"""Stage 6: LoRA SFT on the Hugging Face stack: label audit, stop-token contract, the does-it-stop test."""
