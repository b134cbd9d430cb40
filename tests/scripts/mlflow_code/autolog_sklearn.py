"""mlflow.autolog() with scikit-learn: autolog starts and ends the run itself."""
import time

import mlflow
import numpy as np
from sklearn.linear_model import Ridge

mlflow.autolog(log_models=False, log_datasets=False, silent=True)
x = np.random.default_rng(0).normal(size=(200, 4))
y = x @ np.array([1.0, 2.0, 0.5, -1.0])
time.sleep(0.6)
Ridge(alpha=0.5).fit(x, y)
time.sleep(0.6)
mlflow.end_run()
