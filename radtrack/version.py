"""What ``radtrack --version`` prints: the release (``radtrack.__version__``, which
pyproject.toml reads too) and, when radtrack runs from a git checkout (``pip install -e``, as
``make demo`` and ``make test`` install it), the commit it runs, so that two nodes running
different code never print the same version.

``0.1.0`` from an installed release; ``0.1.0+g1a2b3c4`` from a checkout at commit 1a2b3c4;
``0.1.0+g1a2b3c4.dirty`` when tracked files differ from that commit.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent  # the folder holding radtrack/, in a checkout


def describe(root: Path = CHECKOUT) -> str:
    """The version string for ``radtrack --version`` (the git part only from a checkout)."""
    from radtrack import __version__

    commit = git_commit(root)
    return f"{__version__}+g{commit}" if commit else __version__


def git_commit(root: Path) -> str:
    """``<short sha>`` or ``<short sha>.dirty`` of the checkout at ``root``; "" when ``root``
    is not the top of a git work tree holding radtrack (an installed copy), or git is missing."""
    if not (root / ".git").exists() or not (root / "radtrack").is_dir():
        return ""

    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                  text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None

    head = git("rev-parse", "--short=7", "HEAD")
    if head is None or head.returncode != 0 or not head.stdout.strip():
        return ""
    status = git("status", "--porcelain", "--untracked-files=no", "--", "radtrack", "radt",
                 "pyproject.toml")
    dirty = status is not None and status.returncode == 0 and bool(status.stdout.strip())
    return head.stdout.strip() + (".dirty" if dirty else "")
