"""Automated essay scoring: a tiny BERT encoder regresses a score from [CLS] for essays of very different lengths,
padded to a common length with the [PAD] id, in a hand-written training loop. The tokenizer's attention_mask is
computed but not passed to the model, so every token attends to the padding positions: short essays are encoded as
"mostly padding" and their representation depends on how long the other essays in the batch were. BERT accepts a
missing mask silently (it assumes all ones), so training runs and the loss goes down, but the model learns from
padding artefacts (here essay length leaks through the number of pads) from the first step.

Source: https://github.com/CarryCKW/AES-NPCR/issues/7
"""

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

torch.manual_seed(0)
vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + [f"t{i}" for i in range(40)]
tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(
    tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]"
)
g = torch.Generator().manual_seed(0)
essays, scores = [], []
for _ in range(160):
    n = int(torch.randint(3, 30, (1,), generator=g))
    ids = torch.randint(0, 40, (n,), generator=g)
    essays.append("[CLS] " + " ".join(f"t{i}" for i in ids.tolist()) + " [SEP]")
    scores.append(float((ids < 10).float().mean()) * 4)  # score = share of "good" words, independent of length
scores = torch.tensor(scores)

enc = BertModel(
    BertConfig(
        vocab_size=len(vocab),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=40,
    ),
    add_pooling_layer=False,
)
head = torch.nn.Linear(64, 1)
opt = torch.optim.AdamW(list(enc.parameters()) + list(head.parameters()), lr=1e-3)
enc.train()
for step in range(40):
    idx = torch.randint(0, 160, (16,), generator=g)
    batch = tok([essays[i] for i in idx], padding=True, return_tensors="pt", add_special_tokens=False)
    h = enc(input_ids=batch["input_ids"]).last_hidden_state  # BUG-LINE
    pred = head(h[:, 0]).squeeze(-1)
    loss = F.mse_loss(pred, scores[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(step, round(loss.item(), 4))
enc.eval()
with torch.no_grad():
    b = tok(essays[:32], padding=True, return_tensors="pt", add_special_tokens=False)
    print(
        "MSE on 32 essays (masked eval):",
        float(F.mse_loss(head(enc(**b).last_hidden_state[:, 0]).squeeze(-1), scores[:32])),
    )
