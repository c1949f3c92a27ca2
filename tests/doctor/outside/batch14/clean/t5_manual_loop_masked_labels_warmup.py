"""Hand-written T5 seq2seq loop with explicit decoder inputs, -100 label masking and warmup.

Unusual but correct: the loop builds `decoder_input_ids` itself (target shifted right behind the
decoder start token) and passes labels equal to the unshifted target in which every pad
position is replaced by -100, as explained in the report about why `lm_labels[y == pad] = -100`
is needed. A linear warmup/decay schedule from transformers and manual gradient-norm clipping
are used; the scheduler is stepped once per optimizer step.

Source: https://github.com/Shivanandroy/T5-Finetuning-PyTorch/issues/3
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration, get_linear_schedule_with_warmup

torch.manual_seed(0)
torch.set_num_threads(2)

PAD, EOS, VOCAB, MAXLEN = 0, 1, 24, 10
STEPS = 60


def make_batch(bs=12):
    src = torch.full((bs, MAXLEN), PAD, dtype=torch.long)
    tgt = torch.full((bs, MAXLEN), PAD, dtype=torch.long)
    for i in range(bs):
        n = int(torch.randint(2, 6, (1,)))
        seq = torch.randint(2, VOCAB, (n,))
        src[i, :n], src[i, n] = seq, EOS
        tgt[i, :n], tgt[i, n] = seq.flip(0), EOS
    return src, (src != PAD).long(), tgt


config = T5Config(
    vocab_size=VOCAB,
    d_model=32,
    d_ff=64,
    d_kv=16,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=2,
    pad_token_id=PAD,
    eos_token_id=EOS,
    decoder_start_token_id=PAD,
    dropout_rate=0.0,
)
model = T5ForConditionalGeneration(config)
opt = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)
sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=5, num_training_steps=STEPS)

model.train()
for step in range(STEPS):
    src, src_mask, tgt = make_batch()
    decoder_input_ids = torch.cat([torch.full((tgt.size(0), 1), config.decoder_start_token_id), tgt[:, :-1]], dim=1)
    labels = tgt.masked_fill(tgt == PAD, -100)
    out = model(input_ids=src, attention_mask=src_mask, decoder_input_ids=decoder_input_ids, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    if step % 10 == 0 or step == STEPS - 1:
        print(f"step {step:2d} loss {out.loss.item():.4f} lr {sched.get_last_lr()[0]:.5f}")
