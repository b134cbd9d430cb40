"""HuggingFace Trainer reporting to MLflow: a tiny randomly initialised BERT, no downloads."""
import os
import sys

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=32, num_labels=2)
model = BertForSequenceClassification(config)


class Data(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> dict:
        ids = torch.randint(1, 64, (16,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "attention_mask": torch.ones(16, dtype=torch.long),
                "labels": torch.tensor(i % 2)}


args = TrainingArguments(output_dir=sys.argv[1], report_to=["mlflow"], run_name="hf-tiny",
                         max_steps=int(os.environ.get("STEPS", "12")), logging_steps=2,
                         per_device_train_batch_size=8, save_strategy="no",
                         use_cpu=not torch.cuda.is_available(), disable_tqdm=True)
Trainer(model=model, args=args, train_dataset=Data()).train()
