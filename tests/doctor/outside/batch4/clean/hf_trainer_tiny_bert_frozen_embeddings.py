"""Fine-tuning a tiny BertForSequenceClassification (built from a local BertConfig) with the Hugging Face
Trainer while the embedding layer is intentionally frozen to save memory and keep the vocabulary vectors fixed;
the encoder and classifier train normally. Frozen embedding parameters are intended.

Source: https://huggingface.co/docs/transformers/training
"""

import tempfile

import torch
import transformers

transformers.logging.set_verbosity_error()
torch.manual_seed(0)
config = transformers.BertConfig(
    vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, num_labels=3
)
model = transformers.BertForSequenceClassification(config)
model.bert.embeddings.requires_grad_(False)

train = []
for _ in range(48):
    ids = torch.randint(1, 100, (12,))
    train.append({"input_ids": ids, "attention_mask": torch.ones(12, dtype=torch.long), "labels": int(ids[0] % 3)})

with tempfile.TemporaryDirectory() as tmp:
    args = transformers.TrainingArguments(
        output_dir=tmp,
        max_steps=5,
        per_device_train_batch_size=8,
        learning_rate=5e-4,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
    )
    transformers.Trainer(model=model, args=args, train_dataset=train).train()
