"""HF Trainer causal-LM fine-tuning where the pad token is set to the EOS token.

Every training text ends with <eos>. The tokenizer has no pad token, so it is set to the EOS
token and DataCollatorForLanguageModeling(mlm=False) is used. That collator replaces every
position whose id equals pad_token_id with -100 in the labels, which also removes the real
EOS at the end of each example. The model is never trained to emit EOS and will not stop
generating; the training loss looks fine.

Source: https://github.com/huggingface/trl/issues/1623
"""

import tempfile

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    DataCollatorForLanguageModeling,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)

torch.manual_seed(0)
torch.set_num_threads(2)

words = [f"w{i}" for i in range(40)]
vocab = {w: i for i, w in enumerate(words)}
vocab["<unk>"] = len(vocab)
vocab["<eos>"] = len(vocab)
tok_model = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tok_model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok_model, unk_token="<unk>", eos_token="<eos>")
tokenizer.pad_token = tokenizer.eos_token  # BUG-LINE

g = torch.Generator().manual_seed(0)
texts = []
for _ in range(128):
    s = int(torch.randint(0, 40, (1,), generator=g))
    n = int(torch.randint(3, 9, (1,), generator=g))
    texts.append(" ".join(words[(s + k) % 40] for k in range(n)) + " <eos>")
ds = [dict(tokenizer(t)) for t in texts]

eos_id = tokenizer.eos_token_id
cfg = GPT2Config(
    vocab_size=len(vocab),
    n_positions=32,
    n_embd=48,
    n_layer=2,
    n_head=4,
    bos_token_id=eos_id,
    eos_token_id=eos_id,
    pad_token_id=eos_id,
)
model = GPT2LMHeadModel(cfg)
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=16,
    max_steps=60,
    learning_rate=3e-3,
    logging_steps=20,
    report_to=[],
    use_cpu=True,
    save_strategy="no",
    disable_tqdm=True,
)
trainer = Trainer(
    model=model, args=args, train_dataset=ds, data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False)
)
trainer.train()

model.eval()
with torch.no_grad():
    ids = torch.tensor([tokenizer("w3 w4 w5 w6")["input_ids"]])
    p_eos = model(input_ids=ids).logits[0, -1].softmax(-1)[eos_id].item()
print(f"P(eos | complete sentence) = {p_eos:.4f}")
