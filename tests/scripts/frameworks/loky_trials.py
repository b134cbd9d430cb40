"""joblib's loky backend: three trials on two worker processes, over two ``Parallel`` calls
(the second reuses a worker of the first: loky keeps its executor), each trial its own MLflow
run with a few metrics over about 0.6 s. Prints the worker pid of each trial."""
import os
import time

from joblib import Parallel, delayed


def trial(i: int) -> int:
    import mlflow

    with mlflow.start_run(run_name=f"loky-{i}"):
        for step in range(3):
            mlflow.log_metric("score", i + step / 10, step=step)
            time.sleep(0.2)
    return os.getpid()


if __name__ == "__main__":
    first = Parallel(n_jobs=2, backend="loky")(delayed(trial)(i) for i in range(2))
    second = Parallel(n_jobs=2, backend="loky")(delayed(trial)(i) for i in range(2, 3))
    print("loky pids", os.getpid(), *first, *second, flush=True)
