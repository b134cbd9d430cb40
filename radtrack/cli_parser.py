"""The ``radtrack`` command's options: one parser for a launch (a script or a sheet);
the subcommands (``SUBCOMMANDS``) parse their own."""

from __future__ import annotations

import argparse
from typing import NoReturn

from radtrack import inputs
from radtrack.spec import DEFAULT_INTERVAL

SUBCOMMANDS = ("listeners", "sync", "status", "report", "export", "ui")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line saying what is wrong, exit 2, before anything starts.
        self.exit(2, f"radtrack: error: {message} (see radtrack --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="radtrack",
        description="Run a Python script or an experiment sheet as tracked MLflow runs with "
                    "hardware metrics. Subcommands: " + ", ".join(SUBCOMMANDS) + ".",
        usage="radtrack [options] SCRIPT.py [script args...] | SHEET.csv | "
              "{listeners,sync,status,report,export,ui} ...",
    )
    p.add_argument("target", help="a Python script or an experiment sheet (.csv)")
    p.add_argument("script_args", nargs=argparse.REMAINDER,
                   help="arguments passed to the script verbatim")
    p.add_argument("-e", "--experiment", default="Default",
                   type=inputs.argument(inputs.text_argument), help="MLflow experiment name or id")
    p.add_argument("-w", "--workload", type=inputs.argument(inputs.count), default=None,
                   help="workload number (default: the next free one in the experiment)")
    p.add_argument("-d", "--devices", default="", help="GPUs: 0, 0+1, or a GPU UUID")
    p.add_argument("-c", "--collocation", default="-",
                   help="'-' (plain), 'mps', 'mps:<percent>' or a MIG profile such as 1g.10gb")
    p.add_argument("-l", "--listeners", default=None,
                   help="listeners joined by '+', e.g. smi+top+dcgm; 'none' for none "
                        "(default: every installed listener available on this host)")
    p.add_argument("--interval", type=inputs.argument(inputs.finite), default=None,
                   help=f"seconds between listener samples (default {DEFAULT_INTERVAL:g})")
    p.add_argument("--max-epoch", "-i", "--epoch", type=inputs.argument(inputs.integer),
                   default=None, metavar="N",
                   help="stop the script once it logs a metric with epoch >= N")
    p.add_argument("--max-time", "-t", "--time", type=inputs.argument(inputs.finite),
                   default=None, metavar="MINUTES",
                   help="stop the script after N minutes")
    p.add_argument("--manual", action="store_true",
                   help="start listeners and timing when the script enters RADTBenchmark()")
    p.add_argument("--tracking-uri", default=None,
                   help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)")
    p.add_argument("--run-name", default=None, type=inputs.argument(inputs.text_argument),
                   help="MLflow run name (single runs)")
    p.add_argument("--grace", type=inputs.argument(inputs.seconds), default=10.0,
                   help="seconds between SIGINT, SIGTERM and SIGKILL when stopping a script")
    p.add_argument("--rerun", "-r", action="store_true",
                   help="sheets: rerun FAILED and KILLED workloads")
    # radT's launcher flags (docs/radt-migration.md): --local is what radtrack always does.
    p.add_argument("--local", action="store_true",
                   help="radT's flag; a no-op: radtrack always runs in the current environment")
    p.add_argument("--conda", action="store_true",
                   help="radT's per-run conda environments: not supported (refused)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and exit; what this host lacks (no GPU, no MPS tool) "
                        "is a warning")
    p.add_argument("--allow-cpu-fallback", action="store_true",
                   help="run rows that ask for GPUs (Devices, -d) on a host without one, on "
                        "CPU, with a warning (refused otherwise); MPS, MIG, Clocks and "
                        "PowerLimit still need a GPU")
    end = p.add_mutually_exclusive_group()
    end.add_argument("--detach-end", dest="end", action="store_const", const="detach",
                     help="give the shell back once the scripts ended and their status and "
                          "samples are on disk; the runs are stored in the background "
                          "(`radtrack sync` finishes them if that is interrupted); the default "
                          "on a terminal (else $RADTRACK_END=detach)")
    end.add_argument("--wait-end", dest="end", action="store_const", const="wait",
                     help="return only once everything is stored (the default off a terminal, "
                          "or $RADTRACK_END=wait)")
    p.add_argument("--carbon-intensity", type=inputs.argument(inputs.finite), default=None,
                   metavar="G_PER_KWH",
                   help="grid carbon intensity for the footprint (g CO2e/kWh; also "
                        "$RADTRACK_CARBON_INTENSITY or a CarbonIntensity column)")
    p.add_argument("--pue", type=inputs.argument(inputs.finite), default=None,
                   help="data-centre power usage effectiveness for the footprint (default 1)")
    s = p.add_argument_group("executor (sheets)")
    s.add_argument("--executor", default=None,
                   help="where workloads run: local (this host, default) or slurm (one batch "
                        "job per workload); default $RADTRACK_EXECUTOR, else local")
    s.add_argument("--partition", default=None, help="slurm: sbatch --partition (sheet column "
                                                     "Partition wins)")
    s.add_argument("--account", default=None, help="slurm: sbatch --account (column Account)")
    s.add_argument("--time-limit", default=None,
                   help="slurm: job time limit as sbatch --time takes it, e.g. 30, 1:30:00, "
                        "2-00:00:00 (column TimeLimit; -t/--time is radT's max minutes)")
    s.add_argument("--qos", default=None, help="slurm: sbatch --qos (column QoS)")
    s.add_argument("--constraint", default=None,
                   help="slurm: sbatch --constraint (column Constraint)")
    s.add_argument("--cpus-per-task", default=None, metavar="N",
                   help="slurm: CPUs of each workload's job (column Cpus; default 2 per row + 1 "
                        "for the launcher and listeners)")
    s.add_argument("--mem", default=None,
                   help="slurm: memory of each workload's job as sbatch --mem takes it (16G)")
    s.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                   help="slurm: one more sbatch argument, passed as is; repeatable "
                        "(--sbatch-arg=--mem=16G --sbatch-arg=--exclusive)")
    s.add_argument("--shared-fs", action="store_true",
                   help="slurm: the sqlite:/// or file store path is on a filesystem every "
                        "node mounts (otherwise such a store is refused)")
    s.add_argument("--detach", action="store_true",
                   help="slurm: return after submitting; 'radtrack status SHEET' refreshes it")
    n = p.add_argument_group("multi-node (one run over several nodes; docs/sheets.md)")
    n.add_argument("--nodes", type=inputs.argument(inputs.integer), default=None, metavar="N",
                   help="run the script as one run over N nodes: started by hand on each node "
                        "with --node-rank and --master")
    n.add_argument("--node-rank", type=inputs.argument(inputs.integer), default=None, metavar="K",
                   help="this node's rank, 0..N-1; node 0 creates the run and hosts the rendezvous")
    n.add_argument("--master", default=None, metavar="HOST[:PORT]",
                   help="node 0's host as every node reaches it (MASTER_ADDR) and radtrack's "
                        "rendezvous port there (default 29450)")
    return p
