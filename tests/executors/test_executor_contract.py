"""The executor contract through the CLI (radtrack.cli.main in this process): the command
picks one executor and hands it the launch; each executor refuses what is not its own, in
one message naming the flag, the row or the column."""

from __future__ import annotations

from pathlib import Path

from support import run_cli

HEADER = "Experiment,Workload,Devices,Collocation,File,Listeners,Params"
STORE = {"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}  # never reached: every call is refused or dry


def _files(tmp_path: Path, extra_header: str = "", extra_cell: str = "") -> tuple[Path, Path]:
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(f"{HEADER}{extra_header}\ncontract,1,-,-,train.py,none,{extra_cell}\n")
    return script, sheet


def test_each_executor_refuses_what_is_not_its_own(tmp_path: Path) -> None:
    script, sheet = _files(tmp_path, ",Partition", ",bad name")
    p = run_cli("--executor", "slurm", str(script), env=STORE)
    assert p.returncode == 2
    assert "--executor slurm runs experiment sheets (.csv); put the script in a one-row sheet" \
        in p.stderr
    # the SLURM executor's own flags, on a local launch and on one node of a multi-node run
    p = run_cli("--shared-fs", "--sbatch-arg=--exclusive", str(script), env=STORE)
    assert p.returncode == 2
    assert "--shared-fs, --sbatch-arg only apply with --executor slurm" in p.stderr
    p = run_cli("--nodes", "2", "--node-rank", "0", "--master", "127.0.0.1", "--detach",
                str(script), env=STORE)
    assert p.returncode == 2 and "--detach only apply with --executor slurm" in p.stderr
    # the multi-node launch runs one script; a sheet's rows go over nodes under SLURM
    p = run_cli("--nodes", "2", "--node-rank", "0", "--master", "127.0.0.1", str(sheet), env=STORE)
    assert p.returncode == 2
    assert "a sheet's rows go over nodes with --executor slurm" in p.stderr
    p = run_cli("--executor", "slurm", "--nodes", "2", "--node-rank", "1", str(sheet), env=STORE)
    assert p.returncode == 2
    assert "--node-rank and --master start one node by hand" in p.stderr
    # an executor's row option, read by the sheet reader through the executor's declaration:
    # a bad cell names its row and column, a bad flag names the flag
    p = run_cli("--executor", "slurm", "--dry-run", str(sheet), env=STORE)
    assert p.returncode != 0
    assert "sheet.csv:2: column Partition: 'bad name' is not a SLURM name" in p.stderr
    p = run_cli("--executor", "slurm", "--dry-run", "--qos", "no way", str(sheet), env=STORE)
    assert p.returncode == 2 and "--qos: 'no way' is not a SLURM name" in p.stderr


def test_the_slurm_row_options_reach_sbatch_from_the_sheet_and_the_flags(tmp_path: Path) -> None:
    _script, sheet = _files(tmp_path, ",Partition,Cpus", ",gpu-short,3")
    p = run_cli("--executor", "slurm", "--dry-run", "--qos", "high", "--mem", "8g", str(sheet),
                env=STORE)
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stdout.splitlines() if x.strip().startswith("contract-1:"))
    assert "--partition=gpu-short" in line and "--qos=high" in line and "--mem=8G" in line
    assert "--cpus-per-task=3" in line
    # a local launch takes the same sheet: those columns are the SLURM executor's, unread here
    p = run_cli("--dry-run", str(sheet), env=STORE)
    assert p.returncode == 0, p.stderr
    assert "sbatch" not in p.stdout


class _QueueExecutor:
    """A new executor as docs/architecture.md "Add an executor" says: one class, one
    registration; its flag, its row option and its submit, nothing else touched."""

    name = "queue"
    flags = ("queue_name",)

    def __init__(self) -> None:
        from radtrack.executor_contract import RowOption

        self.row_options = (RowOption("queue", None, "queue_name", self._parse),)
        self.launches: list = []
        self.asked: list = []  # (action, enquiry) of every status/cancel put to it
        self.own: set = set()  # the sheets it says it runs

    @staticmethod
    def _parse(text: str) -> str:
        if not text.isalnum():
            raise ValueError(f"{text!r} is not a queue name (letters and digits)")
        return text

    def add_options(self, parser) -> None:
        parser.add_argument_group("queue executor").add_argument("--queue-name", default=None)

    def why_end_waits(self, asked: bool) -> str | None:
        return "the queue's jobs store their own runs" if asked else ""

    def check(self, launch) -> None:
        from radtrack.errors import RadtrackError

        if not launch.sheet:
            raise RadtrackError("--executor queue runs experiment sheets (.csv)")

    def check_rows(self, specs, sheet) -> None:
        pass

    def submit(self, launch) -> int:
        self.launches.append(launch)
        return 0

    def status(self, enquiry) -> int | None:
        self.asked.append(("status", enquiry))
        if enquiry.target in self.own:
            print(f"queue: {enquiry.target.name} waits")
            return 1
        return None

    def cancel(self, enquiry) -> int | None:
        self.asked.append(("cancel", enquiry))
        return 0 if enquiry.target in self.own else None


QUEUE = _QueueExecutor()


def test_a_new_executor_is_one_class_and_one_registration(tmp_path: Path, monkeypatch) -> None:
    from radtrack import executor_registry
    from radtrack.sheet import read_sheet

    monkeypatch.setitem(executor_registry.EXECUTORS, "queue", f"{__name__}:QUEUE")
    QUEUE.launches.clear()
    script, sheet = _files(tmp_path)
    p = run_cli("--executor", "queue", "--queue-name", "gpu7", str(sheet), env=STORE)
    assert p.returncode == 0, p.stderr
    (launch,) = QUEUE.launches
    assert launch.target == sheet and launch.sheet and launch.store.uri == STORE["MLFLOW_TRACKING_URI"]
    (spec,) = read_sheet(launch.target, launch.defaults, check_host=False)
    assert spec.executor_options == {"queue": "gpu7"}  # its row option, from its flag
    p = run_cli("--queue-name", "gpu7", str(script), env=STORE)  # not its launch: refused
    assert p.returncode == 2 and "--queue-name only apply with --executor queue" in p.stderr
    p = run_cli("--executor", "queue", "--queue-name", "gpu 7", str(sheet), env=STORE)
    assert p.returncode == 2 and "--queue-name: 'gpu 7' is not a queue name" in p.stderr
    p = run_cli("--executor", "queue", str(script), env=STORE)
    assert p.returncode == 2 and "--executor queue runs experiment sheets" in p.stderr
    assert len(QUEUE.launches) == 1


def test_status_and_cancel_ask_the_executors_in_turn(tmp_path: Path, monkeypatch) -> None:
    """``radtrack status|cancel SHEET`` through the registry: an executor's own sheet is
    answered by it, before the local one; a sheet nobody ran is one message naming it."""
    from radtrack import executor_registry

    monkeypatch.setitem(executor_registry.EXECUTORS, "queue", f"{__name__}:QUEUE")
    QUEUE.asked.clear()
    _script, sheet = _files(tmp_path)
    QUEUE.own = {sheet}
    p = run_cli("status", str(sheet), "--tracking-uri", "sqlite:///x.db")
    assert (p.returncode, p.stdout) == (1, "queue: sheet.csv waits\n"), p.stderr
    (action, enquiry), = QUEUE.asked
    assert action == "status" and enquiry.target == sheet
    assert enquiry.tracking_uri == "sqlite:///x.db"
    p = run_cli("cancel", str(sheet))
    assert p.returncode == 0 and QUEUE.asked[-1][0] == "cancel"
    QUEUE.own = set()  # not its sheet: the local executor is asked, which never ran it
    for action in ("status", "cancel"):
        p = run_cli(action, str(sheet))
        assert p.returncode == 2 and QUEUE.asked[-1][0] == action
        assert f"{sheet}: nothing of it" in p.stderr and "no launcher holds it" in p.stderr
    p = run_cli("status", "--executor", "local", str(sheet))  # that executor only
    assert p.returncode == 2 and "nothing of it ran under local" in p.stderr
    assert QUEUE.asked[-1][0] == "cancel"  # not asked again
    p = run_cli("cancel", "--executor", "kube", str(sheet))
    assert p.returncode == 2 and "--executor: unknown executor 'kube'" in p.stderr
    p = run_cli("status", str(tmp_path / "none.csv"))
    assert p.returncode == 2 and "none.csv: no such sheet" in p.stderr
