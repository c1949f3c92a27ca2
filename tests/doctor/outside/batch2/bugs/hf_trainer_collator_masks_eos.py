"""An HF Trainer causal-LM fine-tune with ``pad_token = eos_token`` and DataCollatorForLanguageModeling
(mlm=False): the collator sets every label equal to the pad id to -100, which masks every real end-of-text token
as well, so the model never learns to stop.

Source: https://github.com/huggingface/transformers/issues/23530
"""

import random
import tempfile

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import (
    DataCollatorForLanguageModeling,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)

random.seed(0)
torch.manual_seed(0)
WORDS = ["red", "green", "blue", "small", "large", "cat", "dog", "bird", "runs", "sleeps"]
texts = [" ".join(random.choices(WORDS, k=random.randint(3, 9))) for _ in range(128)]
raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
raw.pre_tokenizer = pre_tokenizers.Whitespace()
raw.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["<eos>", "<unk>"]))
raw.post_processor = processors.TemplateProcessing(single="$A <eos>", special_tokens=[("<eos>", 0)])
tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>", unk_token="<unk>")
tok.pad_token = tok.eos_token  # BUG-LINE
rows = [tok(t) for t in texts]
model = GPT2LMHeadModel(
    GPT2Config(
        vocab_size=len(tok),
        n_positions=16,
        n_embd=32,
        n_layer=1,
        n_head=2,
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
)
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    max_steps=8,
    per_device_train_batch_size=8,
    learning_rate=1e-3,
    report_to="none",
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
)
collator = DataCollatorForLanguageModeling(tok, mlm=False)
Trainer(model=model, args=args, train_dataset=rows, data_collator=collator).train()
