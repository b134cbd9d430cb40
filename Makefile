# Two entry points for a fresh machine with Python >= 3.11:
#   make demo   install radtrack and run the quickstart experiment (CPU is enough)
#   make test   install radtrack with its test tools and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
export MLFLOW_DISABLE_TELEMETRY := true
# Python keeps its compiled modules (__pycache__, and pytest's rewritten test modules): a
# shell that sets PYTHONDONTWRITEBYTECODE would have every launch, listener and pytest worker
# of the suite compile radtrack again (collection: 12.4 CPU-s a worker, 6.5 with the cache)
unexport PYTHONDONTWRITEBYTECODE

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

# The launch's copy of the sheet, its statuses written back: a second `make demo` reuses the
# runs it holds (every row FINISHED) instead of adding a launch; an interrupted one resumes.
DEMO_SHEET := examples/quickstart.last.csv
DEMO_STATE = $(BIN)/python -c "import csv, sys; rows = list(csv.DictReader(open(sys.argv[1]))); \
	print('done' if rows and all(r['Status'].startswith('FINISHED') for r in rows) else 'partial')" $(DEMO_SHEET)

demo: $(VENV)/.demo-installed
	@if [ ! -f $(DEMO_SHEET) ]; then \
	  echo "[make] adding a launch: examples/quickstart.csv (two small CPU workloads, about a minute),"; \
	  echo "[make] copied to $(DEMO_SHEET), where radtrack writes each row's status"; \
	  cp examples/quickstart.csv $(DEMO_SHEET); \
	elif [ "$$($(DEMO_STATE))" = done ]; then \
	  echo "[make] reusing the existing launch: every row of $(DEMO_SHEET) is FINISHED, its runs"; \
	  echo "[make] are in mlflow.db; nothing runs again (rm $(DEMO_SHEET) && make demo: a new launch)"; \
	else \
	  echo "[make] resuming $(DEMO_SHEET): its rows not FINISHED run in a new launch, the others are kept"; \
	fi
	$(BIN)/radtrack $(DEMO_SHEET)
	@echo
	@echo "Runs are in sqlite:///mlflow.db, experiment 'quickstart'. Look at them with:"
	@echo "  $(BIN)/radtrack report quickstart    (the figures, in this terminal)"
	@echo "  $(BIN)/radtrack ui                   (radtrack's page, http://127.0.0.1:8050/?experiment=quickstart)"
	@echo "  $(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db   (MLflow's own UI)"

test: $(VENV)/.test-installed
	./scripts/ensure-chromium.sh
	./scripts/ensure-postgres.sh
	./scripts/ensure-slurm.sh
	$(BIN)/ruff check .
	$(BIN)/pytest -q -n 3 --dist loadfile -m 'not timing' --durations=30
	$(BIN)/pytest -q -m timing --durations=30 $$(grep -rlE 'mark\.timing' tests --include='test_*.py')

lint: $(VENV)/.test-installed
	$(BIN)/ruff check .

ui: $(VENV)/.demo-installed
	$(BIN)/radtrack ui

clean:
	rm -rf $(VENV) mlflow.db mlartifacts .radtrack examples/quickstart.last.csv
