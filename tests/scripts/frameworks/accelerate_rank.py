"""One process of ``accelerate launch``: gloo on CPU; the main process makes an MLflow run
(``if accelerator.is_main_process``, the common case) and logs the reduced sum each step."""
import time

import torch
from accelerate import Accelerator

accelerator = Accelerator(cpu=True)
main = accelerator.is_main_process
if main:
    import mlflow

    mlflow.start_run(run_name="accelerate-main")
    mlflow.log_param("world", accelerator.num_processes)
t = torch.ones(8)
for step in range(8):
    total = accelerator.reduce(t.clone(), reduction="sum")
    if main:
        mlflow.log_metric("sum", float(total[0]), step=step)
    time.sleep(0.1)
accelerator.wait_for_everyone()
if main:
    mlflow.end_run()
accelerator.end_training()
