"""pad_token is set to eos_token, so DataCollatorForLanguageModeling masks every EOS in the labels.

The collator replaces all label positions equal to pad_token_id with -100. Because the pad
token is the EOS token, the real end-of-sequence tokens are masked too: the model never gets a
training signal to emit EOS, from the first batch on.
Source: https://github.com/huggingface/sentence-transformers/issues/1952
"""

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

words = ["<eos>", "<unk>"] + [f"w{i}" for i in range(30)]
tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<eos>", unk_token="<unk>")
tok.pad_token = tok.eos_token  # BUG-LINE
collator = DataCollatorForLanguageModeling(tokenizer=tok, mlm=False)

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=len(words), n_positions=32))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(8):
    texts = [" ".join(f"w{(i + j) % 30}" for j in range(3 + (i + step) % 4)) + " <eos>" for i in range(4)]
    batch = collator([{"input_ids": tok(t)["input_ids"]} for t in texts])
    out = model(**batch)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"clm loss {out.loss.item():.4f}")
