"""PyTorch Lightning with MLFlowLogger in an experiment of its own (a tiny random model)."""
import os

import lightning as L
import torch
from lightning.pytorch.loggers import MLFlowLogger
from torch.utils.data import DataLoader, TensorDataset


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(8, 1)

    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=False)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


torch.manual_seed(0)
x = torch.randn(256, 8)
data = DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)
logger = MLFlowLogger(experiment_name="pl-exp", run_name="pl-tiny",
                      tracking_uri=os.environ.get("MLFLOW_TRACKING_URI"))
trainer = L.Trainer(max_epochs=int(os.environ.get("EPOCHS", "3")), logger=logger,
                    log_every_n_steps=4, enable_checkpointing=False, enable_progress_bar=False,
                    enable_model_summary=False, accelerator="auto", devices=1)
trainer.fit(Tiny(), data)
