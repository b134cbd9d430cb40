# Two entry points for a fresh machine with Python >= 3.11:
#   make demo   install radtrack and run the quickstart experiment (CPU is enough)
#   make test   install radtrack with its test tools and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
export MLFLOW_DISABLE_TELEMETRY := true

.PHONY: demo test lint ui clean

# pip's own progress (downloads, builds) is shown: the first install takes minutes
$(BIN)/python:
	@echo "[make] creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.demo-installed: pyproject.toml constraints.txt | $(BIN)/python
	@echo "[make] installing radtrack and its dependencies into $(VENV), with PyTorch for the"
	@echo "[make] example workloads (constraints.txt): the first time, about 1 GB to download"
	@echo "[make] and a few minutes; later runs skip this step"
	$(PIP) install --progress-bar on -c constraints.txt -e '.[workloads]'
	touch $@

$(VENV)/.test-installed: pyproject.toml constraints.txt | $(BIN)/python
	@echo "[make] installing radtrack with its test tools into $(VENV) (PyTorch, Lightning,"
	@echo "[make] transformers, Playwright...): the first time, a few GB and several minutes"
	$(PIP) install --progress-bar on -c constraints.txt -e '.[workloads,test]'
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	@echo "[make] running examples/quickstart.csv (two small CPU workloads, about a minute)"
	cp examples/quickstart.csv examples/quickstart.last.csv
	$(BIN)/radtrack examples/quickstart.last.csv
	@echo
	@echo "Runs are in sqlite:///mlflow.db. Look at them with:"
	@echo "  $(BIN)/radtrack ui          (radtrack's page, http://127.0.0.1:8050)"
	@echo "  $(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db   (MLflow's own UI)"
	@echo "  $(BIN)/radtrack report quickstart"

test: $(VENV)/.test-installed
	./scripts/ensure-chromium.sh
	./scripts/ensure-postgres.sh
	./scripts/ensure-slurm.sh
	$(BIN)/ruff check .
	$(BIN)/pytest -q -n 2 --dist loadfile -m 'not timing'
	$(BIN)/pytest -q -m timing

lint: $(VENV)/.test-installed
	$(BIN)/ruff check .

ui: $(VENV)/.demo-installed
	$(BIN)/radtrack ui

clean:
	rm -rf $(VENV) mlflow.db mlartifacts .radtrack examples/quickstart.last.csv
