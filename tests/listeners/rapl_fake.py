"""A RAPL powercap tree that runs: a copy of a recorded tree (tests/data/rapl) whose
``energy_uj`` counters advance in uneven steps, wrapping at each zone's
``max_energy_range_uj`` as the hardware does; every value written is kept so a test can
check the listener's energy against the tree's true increments.

Driven by a test (:meth:`AdvancingTree.step`), or run as a run's script::

    python rapl_fake.py ROOT LOG.json --steps 150 --step-s 0.02 intel-rapl:0=60 intel-rapl:1=75

which advances ROOT's zones (a tree already copied) and writes what it wrote to LOG.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

DATA = Path(__file__).parents[1] / "data" / "rapl"


class AdvancingTree:
    """``watts[zone]`` for each zone folder (``intel-rapl:0``): each step adds watts x
    step_s J plus a step-dependent wobble, so no two increments are alike."""

    def __init__(self, root: Path, watts: dict[str, float], step_s: float = 0.02):
        self.root, self.watts, self.step_s = root, watts, step_s
        self.max_uj = {z: int((root / z / "max_energy_range_uj").read_text()) for z in watts}
        self.raw = {z: int((root / z / "energy_uj").read_text()) for z in watts}
        self.true_uj = {z: [0] for z in watts}  # cumulative µJ after each write
        self.wrap_at: dict[str, int] = {}  # zone -> the step its counter wrapped at
        self.steps = 0

    @classmethod
    def copy(cls, tree: str, dest: Path, watts: dict[str, float], step_s: float = 0.02) -> AdvancingTree:
        shutil.copytree(DATA / tree, dest / tree)
        return cls(dest / tree, watts, step_s)

    def step(self) -> None:
        self.steps += 1
        for zone, w in self.watts.items():
            inc = int(w * self.step_s * 1e6) + 1000 * (self.steps % 97)
            new = self.raw[zone] + inc
            if new >= self.max_uj[zone]:
                new -= self.max_uj[zone]
                self.wrap_at.setdefault(zone, self.steps)
            self.raw[zone] = new
            tmp = self.root / zone / "energy_uj.tmp"
            tmp.write_text(f"{new}\n")
            tmp.replace(self.root / zone / "energy_uj")  # a reader never sees half a number
            self.true_uj[zone].append(self.true_uj[zone][-1] + inc)

    def increments(self, zone: str) -> set[int]:
        """Every true increment (µJ) between two of the values written to ``zone``."""
        return increments(self.true_uj[zone])


def increments(cumulative: list[int]) -> set[int]:
    return {b - a for i, a in enumerate(cumulative) for b in cumulative[i:]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("log", type=Path)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--step-s", type=float, default=0.02)
    p.add_argument("watts", nargs="+", help="zone=W")
    a = p.parse_args()
    tree = AdvancingTree(a.root, {z: float(w) for z, w in (x.split("=") for x in a.watts)}, a.step_s)
    for _ in range(a.steps):
        time.sleep(a.step_s)
        tree.step()
    a.log.write_text(json.dumps({"true_uj": tree.true_uj, "wrap_at": tree.wrap_at}))


if __name__ == "__main__":
    main()
