"""LoRA fine-tune of a tiny GPT-2 with reentrant gradient checkpointing done right.

Source: https://github.com/axolotl-ai-cloud/axolotl/issues/312

With the reentrant checkpoint implementation, a checkpointed block only gets
gradients if one of its *inputs* requires grad.  Under LoRA the embeddings are
frozen, so the hidden states entering the first block do not require grad and
the adapters inside checkpointed blocks would silently get no gradient.  The
fix from the issue, ``model.enable_input_require_grads()``, registers a
forward hook that marks the embedding output as requiring grad.  Unusual
parts: frozen base model, recomputation in backward, and a hook whose only job
is to keep the autograd graph connected.
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)


def batches(n_steps, bs=16, seq=20, vocab=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n_steps):
        start = torch.randint(0, vocab, (bs, 1), generator=g)
        stride = torch.randint(1, 4, (bs, 1), generator=g)
        yield (start + stride * torch.arange(seq)) % vocab


def main():
    cfg = GPT2Config(
        vocab_size=64,
        n_positions=32,
        n_embd=64,
        n_layer=3,
        n_head=4,
        bos_token_id=0,
        eos_token_id=0,
        use_cache=False,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = GPT2LMHeadModel(cfg)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    model.enable_input_require_grads()
    lora = LoraConfig(
        r=8,
        lora_alpha=16,
        lora_dropout=0.0,
        target_modules=["c_attn", "c_fc"],
        fan_in_fan_out=True,
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, lora)
    model.print_trainable_parameters()
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)
    for step, ids in enumerate(batches(60)):
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 59:
            print(f"step {step:3d} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
