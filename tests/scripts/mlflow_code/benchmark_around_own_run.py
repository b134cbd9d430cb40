"""RADTBenchmark around the script's own MLflow code: a start_run() of its own inside the block."""
import time

from radtrack import RADTBenchmark

with RADTBenchmark() as bench:
    import mlflow  # the row run becomes MLflow's active run here

    mlflow.log_param("stage", "before")  # a plain call before the script's own run: the row run
    with mlflow.start_run(run_name="own-inside"):
        mlflow.log_param("lr", 0.1)
        for step in range(3):
            time.sleep(0.25)
            mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
            bench.log_metric("acc", 0.5 + 0.1 * step, step=step)  # the script's run is active: there
    mlflow.log_metric("after", 1.0)  # the row run again
