"""mlflow.autolog() with scikit-learn: autolog starts the run when fit starts and ends it
when fit returns, so the run's span is the fit (about a second here)."""
import warnings

import mlflow
import numpy as np
from sklearn.neural_network import MLPRegressor

warnings.filterwarnings("ignore")  # ConvergenceWarning: a fixed number of iterations
mlflow.autolog(log_models=False, log_datasets=False, silent=True)
x = np.random.default_rng(0).normal(size=(4000, 8))
y = x @ np.arange(1.0, 9.0)
MLPRegressor(hidden_layer_sizes=(64, 64), alpha=0.5, max_iter=150, random_state=0).fit(x, y)
