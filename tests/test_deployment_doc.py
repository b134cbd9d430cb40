"""docs/deployment.md on this host, step by step, and the doc and that walkthrough kept in step.

``scripts/deployment-walkthrough.sh`` performs the doc's sections in order on a Debian host
without systemd (root, Debian's postgresql package: scripts/ensure-postgres.sh), running
each command of the doc from its text with only placeholders replaced, and writes a trace
of every command (template, command, substitutions, exit status, output). The tests here
run it once and check each step's result, and that every command line of the doc's fenced
blocks is among the templates it ran, or on NOT_RUN below with the reason. A command that
changes in the doc and not in the walkthrough (or the reverse) fails the coverage test.

The walkthrough starts the host's own cluster (``pg_ctlcluster <version> main start``) and
leaves it as it found it; it skips, visibly, without root, the PostgreSQL package, MLflow
or the ``team`` extra's packages, or when the cluster already has a role or database of
the doc's names (``mlflow``...) that the walkthrough did not make.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import report_rows

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "deployment.md"
SCRIPT = ROOT / "scripts" / "deployment-walkthrough.sh"

# What the walkthrough may replace in a command of the doc: the value must match the
# pattern (a full match), and the reason says why it differs from the doc's text.
PLACEHOLDERS: dict[str, tuple[str, str]] = {
    "/path/to/radtrack": (r"/\S+/src", "a copy of the checkout's working tree"),
    "<version>": (r"\d+\.\d+\.\d+\S*", "the version of the wheel pip built"),
    "15": (r"\d+", "the installed PostgreSQL major version (ls /usr/lib/postgresql)"),
    "PASSWORD": (r"[0-9a-f]{24}", "the mlflow role's password, made up per run"),
    ":5432": (r":\d+", "the Debian cluster's port"),
    "/srv/mlflow/artifacts": (r"/\S+/srv/artifacts", "a temp folder"),
    "/etc/mlflow/basic_auth.ini": (r"/\S+/etc/basic_auth.ini", "a temp folder, not /etc"),
    "/shared/mlartifacts": (r"/\S+/shared/mlartifacts", "a temp folder as the shared path"),
    "--host 0.0.0.0": ("--host 127.0.0.1", "the test host does not publish its servers"),
    "--port 5000": (r"--port \d+", "a free port"),
    ":5000": (r":\d+", "the same free port in --allowed-hosts"),
    "--workers 8": ("--workers 1", "a 2-core test host; one worker starts reliably there"),
    "tracker.example.org:5000": (r"127\.0\.0\.1:\d+", "the server on this host"),
    "tracker:5000": (r"127\.0\.0\.1:\d+", "the server on this host"),
    "'...'": (r"'[^']{12,}'", "a password (12+ characters) or the server's secret key"),
    "=...": (r"=viewer-password-12\+", "the viewer's password the doc gave it"),
    "the admin password": (r"admin-[0-9a-f]{16}", "the admin password, made up per run"),
    "postgresql+psycopg://...": (r"postgresql\+psycopg://mlflow:[0-9a-f]{24}@127\.0\.0\.1:\d+/\w+",
                                 "the database URI the doc elides"),
    "EXPERIMENT_ID": (r"\d+", "the id radtrack's refusal names"),
    "radtrack ui": (r"radtrack ui --port \d+", "a free port instead of 8050, which may be taken"),
}

# Command lines of the doc the walkthrough does not run, and why.
NOT_RUN: dict[str, str] = {
    "apt-get install -y postgresql":
        "installs packages: scripts/ensure-postgres.sh runs it before the suite (make test) "
        "and the test needs the package already",
}

# Fenced blocks that are not shell commands, by their first line.
NOT_COMMANDS: dict[str, str] = {
    "GPU node: radtrack launcher --- log_batch": "a sketch of the set-up",
    "location / {": "nginx configuration for a reverse proxy; nginx is not part of radtrack",
}
FILE_BLOCKS = ("[mlflow]",)  # written to a file by the walkthrough (doc_file), compared whole


# -- the doc ---------------------------------------------------------------------------

def fenced_blocks(text: str) -> list[tuple[int, list[str]]]:
    """(line number of the block's first line, its lines) for each ``` block."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] | None = None
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if current is None:
                current, start = [], number + 1
            else:
                blocks.append((start, current))
                current = None
        elif current is not None:
            current.append(line)
    assert current is None, f"{DOC.name}: a ``` block opened on line {start - 1} is not closed"
    return blocks


def tokens(command: str) -> tuple[str, ...]:
    """A shell command as its words: comments, quoting and line continuations do not count."""
    return tuple(shlex.split(command.replace("\\\n", " "), comments=True))


def shell_commands(start: int, lines: list[str]) -> list[tuple[int, tuple[str, ...]]]:
    """(line number, words) of each command in a block: a command goes on over a trailing
    backslash or an open quote; blank and comment-only lines are not commands."""
    commands: list[tuple[int, tuple[str, ...]]] = []
    text, first = "", 0
    for number, line in enumerate(lines, start):
        if not text and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not text:
            first = number
        text += line + "\n"
        if line.endswith("\\"):
            continue
        try:
            words = tokens(text)
        except ValueError:  # an open quote: the command goes on on the next line
            continue
        commands.append((first, words))
        text = ""
    assert not text, f"{DOC.name} line {first}: a command that does not end: {text!r}"
    return commands


def doc_blocks() -> tuple[list[tuple[int, tuple[str, ...]]], list[tuple[int, str]]]:
    """The doc's shell commands and its file blocks (line number, text)."""
    commands: list[tuple[int, tuple[str, ...]]] = []
    files: list[tuple[int, str]] = []
    for start, lines in fenced_blocks(DOC.read_text()):
        head = next((line.strip() for line in lines if line.strip()), "")
        if any(head.startswith(prefix) for prefix in NOT_COMMANDS):
            continue
        if head.startswith(FILE_BLOCKS):
            files.append((start, "\n".join(lines).strip()))
        else:
            commands += shell_commands(start, lines)
    return commands, files


def inline_commands() -> set[tuple[str, ...]]:
    """The words of each `inline code` span of the doc outside its blocks."""
    text = re.sub(r"^```.*?^```", "", DOC.read_text(), flags=re.S | re.M)
    found = set()
    for span in re.findall(r"`([^`]+)`", text):
        try:
            found.add(tokens(span))
        except ValueError:
            pass
    return found


def test_the_docs_blocks_parse_and_the_lists_here_are_current() -> None:
    """Runs everywhere (no root): every block is commands, a file, or a known non-command;
    nothing on the lists here is stale."""
    commands, files = doc_blocks()
    assert len(commands) >= 20 and files, (commands, files)
    text = DOC.read_text()
    heads = [next((line.strip() for line in lines if line.strip()), "")
             for _, lines in fenced_blocks(text)]
    for prefix in NOT_COMMANDS:
        assert any(head.startswith(prefix) for head in heads), f"stale NOT_COMMANDS: {prefix}"
    words = {c for _, c in commands}
    for line in NOT_RUN:
        assert tokens(line) in words, f"stale NOT_RUN: {line!r} is no longer in {DOC.name}"
    for placeholder in PLACEHOLDERS:
        assert placeholder in text, f"stale PLACEHOLDERS: {placeholder!r} is not in {DOC.name}"
    # what NOT_RUN says runs apt-get does run it
    assert re.search(r"apt-get install -y( -q)? postgresql",
                     (ROOT / "scripts" / "ensure-postgres.sh").read_text())


# -- the walkthrough -------------------------------------------------------------------

@dataclass
class Step:
    kind: str  # doc, doc_bg, doc_file, check, cluster
    rc: str
    seconds: str
    log: str
    template: str
    command: str
    subs: list[tuple[str, str]]

    @property
    def output(self) -> str:
        return Path(self.log).read_text(errors="replace") if self.log else ""


@dataclass
class Walkthrough:
    rc: int
    stdout: str
    steps: list[Step]

    def find(self, template_start: str, kind: str = "doc") -> list[Step]:
        found = [s for s in self.steps if s.kind == kind and s.template.startswith(template_start)]
        assert found, f"the walkthrough ran no {kind} step '{template_start}...'"
        return found


def why_not_here() -> str | None:
    if os.geteuid() != 0:
        return "needs root (runuser, pg_ctlcluster, the host's PostgreSQL cluster)"
    for tool in ("pg_ctlcluster", "pg_lsclusters", "runuser", "setsid", "curl", "psql", "flock"):
        if shutil.which(tool) is None:
            return f"{tool} not found (Debian's postgresql package: scripts/ensure-postgres.sh)"
    if not list(Path("/usr/lib/postgresql").glob("*/bin/postgres")):
        return "no /usr/lib/postgresql/<version>/bin/postgres (Debian's postgresql package)"
    if not (Path(sys.executable).parent / "mlflow").exists():
        return f"no mlflow command beside {sys.executable}"
    for module in ("psycopg", "flask_wtf", "setuptools", "pip"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'radtrack[team]')"
    return None


def read_trace(path: Path) -> list[Step]:
    steps = []
    for record in path.read_text().split("\x1e")[:-1]:
        fields = record.split("\x1f")[:-1]
        kind, rc, seconds, log, template, command, *subs = fields
        steps.append(Step(kind, rc, seconds, log, template, command,
                          list(zip(subs[::2], subs[1::2], strict=True))))
    return steps


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory: pytest.TempPathFactory) -> Walkthrough:
    reason = why_not_here()
    if reason:
        pytest.skip(f"deployment walkthrough: {reason}")
    work = tmp_path_factory.mktemp("walkthrough")
    trace = work / "trace"
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), "--work", str(work), "--trace", str(trace),
         "--python", sys.executable, str(ROOT)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)  # no terminal: createuser --pwprompt reads its stdin
    try:
        stdout, _ = proc.communicate(timeout=540)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # its trap stops what it started
        stdout, _ = proc.communicate(timeout=90)
        pytest.fail(f"the walkthrough took over 540 s:\n{stdout[-6000:]}")
    if proc.returncode == 3:
        why = [line for line in stdout.splitlines() if "not made by this script" in line]
        pytest.skip(f"deployment walkthrough: {' '.join(why) or stdout[-500:]}")
    return Walkthrough(proc.returncode, stdout, read_trace(trace))


@pytest.mark.slow
@pytest.mark.timeout(660)
def test_the_walkthrough_runs_every_section_and_leaves_the_cluster_as_found(
        walkthrough: Walkthrough) -> None:
    assert walkthrough.rc == 0, walkthrough.stdout[-8000:]
    assert "all sections done" in walkthrough.stdout
    (cluster,) = [s for s in walkthrough.steps if s.kind == "cluster"]
    assert cluster.template == cluster.command, f"cluster before: {cluster.template}, after: {cluster.command}"
    # nothing it started is left: the servers' and the page's ports are closed again
    for step in walkthrough.steps:
        if step.kind == "doc_bg":
            port = re.search(r"--port (\d+)", step.command).group(1)
            probe = subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/"],
                                   capture_output=True)
            assert probe.returncode == 7, f"something still answers on port {port} ({step.template})"


@pytest.mark.slow
@pytest.mark.timeout(660)
def test_each_step_does_what_the_doc_says(walkthrough: Walkthrough) -> None:
    w = walkthrough
    assert w.rc == 0, w.stdout[-8000:]
    (from_checkout,) = w.find("pip install '/path/to/radtrack[team]'")
    assert "Successfully installed radtrack-" in from_checkout.output
    (wheel,) = w.find("pip wheel --no-deps -w dist /path/to/radtrack")
    assert re.search(r"Successfully built radtrack", wheel.output)
    (from_wheel,) = w.find("pip install 'dist/radtrack-<version>-py3-none-any.whl[team]'")
    assert "Successfully installed radtrack-" in from_wheel.output
    # the installed radtrack (not the checkout's) runs, with the team extra's packages
    (where,) = w.find("python -c 'import radtrack, psycopg, flask_wtf", kind="check")
    assert "/venv-wheel/" in where.output and str(ROOT) + "/radtrack" not in where.output
    assert all("usage: radtrack" in s.output for s in w.find("radtrack --help", kind="check"))

    (ready,) = w.find("runuser -u postgres -- pg_isready")
    assert "accepting connections" in ready.output
    (login,) = w.find("PGPASSWORD=", kind="check")  # createuser --pwprompt set the password
    assert "password accepted" in login.output

    (health,) = w.find("curl http://tracker:5000/health")
    assert health.output.rstrip().endswith("OK")
    listed, other = w.find("curl -sS -o /dev/null -w '%{http_code}\\n' -H 'Host: ", kind="check")
    assert listed.output.strip() == "200" and other.output.strip() == "403", (listed.output, other.output)

    launch, refused, admitted = w.find("radtrack -e resnet -l smi+dcgm+top --interval 0.1 train.py")
    assert "resnet-1 A: FINISHED" in launch.output
    (sheet,) = w.find("radtrack sheet.csv")
    assert "resnet-2 A: FINISHED" in sheet.output

    # basic auth: alice (READ by default) is refused up front, in the doc's words...
    assert refused.rc != "0" and "FINISHED" not in refused.output
    example = re.search(r"`(radtrack: error: user .*?) python -c", DOC.read_text(), re.S).group(1)
    parts = re.split(r"(\(id \d+,|http://tracker:5000)", " ".join(example.split()))
    pattern = "".join(r"\(id \d+," if part.startswith("(id ") else
                      r"http://127\.0\.0\.1:\d+" if part.startswith("http://") else
                      re.escape(part) for part in parts)
    assert re.search(pattern, refused.output), (example, refused.output)
    # ...then the doc's grant admits her; her run is hers
    (grant,) = w.find("python -c \"from mlflow.server import get_app_client\nget_app_client(")
    assert grant.rc == "0" and ("EXPERIMENT_ID", re.search(r"\(id (\d+),", refused.output).group(1)) in grant.subs
    assert "resnet-3 A: FINISHED" in admitted.output

    (layout,) = w.find("curl -fsS http://127.0.0.1:", kind="check")  # radtrack ui as the viewer
    assert '"label":"resnet"' in layout.output.replace(" ", "")
    (report,) = w.find("radtrack report resnet")
    users = {name: row.get("user") for name, row in report_rows(report.output).items()}
    assert users == {"resnet-1 A": "root", "resnet-2 A": "root", "resnet-3 A": "alice"}, report.output

    (location,) = w.find("as_postgres psql -XtAq -d mlflow_direct", kind="check")
    assert re.fullmatch(r"file:///\S+/shared/mlartifacts/resnet", location.output.strip())


@pytest.mark.slow
@pytest.mark.timeout(660)
def test_every_command_of_the_doc_is_run_or_listed(walkthrough: Walkthrough) -> None:
    ran = [s for s in walkthrough.steps if s.kind in ("doc", "doc_bg", "doc_file")]
    for step in ran:  # a template is the doc's text with only the listed placeholders replaced
        command = step.template
        for placeholder, value in step.subs:
            assert placeholder in PLACEHOLDERS, f"{placeholder!r} replaced in {step.template!r}"
            pattern, _ = PLACEHOLDERS[placeholder]
            assert re.fullmatch(pattern, value), f"{placeholder!r} -> {value!r}"
            command = command.replace(placeholder, value)
        assert command == step.command.rstrip("\n"), step.template
    templates = {tokens(s.template) for s in ran if s.kind != "doc_file"}
    commands, files = doc_blocks()
    missing = [f"line {line}: {shlex.join(words)}" for line, words in commands
               if words not in templates and " ".join(words) not in NOT_RUN]
    assert not missing, f"commands of {DOC.name} the walkthrough does not run:\n" + "\n".join(missing)
    written = {s.template.strip() for s in ran if s.kind == "doc_file"}
    for line, text in files:
        assert text in written, f"{DOC.name} line {line}: the walkthrough writes no such file"
    # and the walkthrough runs nothing as the doc's that is not in the doc (a block, or
    # inline code such as `curl http://tracker:5000/health`)
    in_doc = {words for _, words in commands} | inline_commands()
    extra = [s.template for s in ran if s.kind != "doc_file" and tokens(s.template) not in in_doc]
    assert not extra, f"run as commands of {DOC.name} but not in it: {extra}"
