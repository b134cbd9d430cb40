"""The executors: where a launch's workloads run (local.py, slurm_executor.py with the
slurm_*.py it drives, multinode.py). What an executor is, and which exist by name, is below
them: radtrack/executor_contract.py and radtrack/executor_registry.py, which the sheet
reader and the command line ask (docs/architecture.md "Add an executor")."""
