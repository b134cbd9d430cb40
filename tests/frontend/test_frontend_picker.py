"""The picker: workloads from parent/child runs, solo runs, the run filter, ages and durations."""

from __future__ import annotations

import time

import pandas as pd

from radtrack.frontend import picker

T0 = pd.Timestamp("2026-01-01 12:00", tz="UTC")


def _row(run_id: str, role: str | None, parent: str | None = None, workload: int | None = None,
         letter: str | None = None, minutes: int = 0, **extra: str) -> dict:
    row = {"run_id": run_id, "run_name": extra.pop("name", run_id), "status": "FINISHED",
           "start_time": T0 + pd.Timedelta(minutes=minutes), "duration_s": 75.0,
           "parent_run_id": parent, "workload": workload, "letter": letter}
    if role:
        row["tag.radtrack.role"] = role
    if workload is not None:
        row["tag.radtrack.workload"] = str(workload)
    row.update(extra)
    return row


def _frame() -> pd.DataFrame:
    return pd.DataFrame([
        _row("p1", "workload", workload=1),
        _row("c1b", "row", "p1", 1, "B", **{"param.batch-size": "256"}),
        _row("c1a", "row", "p1", 1, "A", **{"param.batch-size": "128"}),
        _row("p2", "workload", workload=2, minutes=10),
        _row("c2a", "row", "p2", 2, "A", minutes=10, **{"tag.radtrack.collocation": "mps"}),
        _row("plain", None, minutes=20, name="notebook run"),
    ])


def test_children_grouped_under_their_parent_and_solo_runs_on_their_own() -> None:
    found = picker.workloads(_frame())
    assert [w.key for w in found] == ["run:plain", "p2", "p1"]  # newest first
    assert found[2].run_ids == ["c1a", "c1b"]  # in letter order
    assert found[2].label.startswith("Workload 1 · 2 runs")
    assert found[1].label.startswith("Workload 2 · 1 run")
    assert found[0].label.startswith("notebook run · 1 run")


def test_a_sheet_run_twice_gets_its_start_time_in_the_label() -> None:
    frame = pd.concat([_frame(), pd.DataFrame([
        _row("p1again", "workload", workload=1, minutes=30),
        _row("c9", "row", "p1again", 1, "A", minutes=30)])], ignore_index=True)
    labels = [w.label for w in picker.workloads(frame) if w.label.startswith("Workload 1")]
    assert len(labels) == 2 and labels[0] != labels[1]


def test_a_sheet_launched_twice_reads_apart_by_launch_time_and_sheet() -> None:
    """Two launches of one sheet in the same minute (issue 52: four entries had read
    'Workload N · 1 run · root · 01:25'): each entry names its launch and its start to the
    second; each launch's header adds the sheet's file name."""
    rows = []
    for launch, second, sheet in (("aaaa1111", 0, "/x/quickstart.csv"), ("bbbb2222", 20, "/x/q2.csv")):
        for number in (1, 2):
            start = T0 + pd.Timedelta(seconds=second + number)
            extra = {"tag.radtrack.launch_id": launch, "tag.radtrack.sheet": sheet,
                     "tag.mlflow.user": "root"}
            rows += [{**_row(f"p{launch}{number}", "workload", workload=number, **extra), "start_time": start},
                     {**_row(f"c{launch}{number}", "row", f"p{launch}{number}", number, "A", **extra),
                      "start_time": start}]
    found = picker.workloads(pd.DataFrame(rows))
    labels = [w.label for w in found]
    assert len(set(labels)) == 4, labels
    assert all(" · launch " in label and "root" not in label for label in labels), labels
    groups = picker.by_launch(found)
    assert [launch for launch, _, _ in groups] == ["bbbb2222", "aaaa1111"]  # newest first
    assert [h.split(" · ")[2] for _, h, _ in groups] == ["q2.csv", "quickstart.csv"]
    assert [[w.label.split(" · ")[0] for w in ws] for _, _, ws in groups] == [
        ["Workload 2", "Workload 1"], ["Workload 2", "Workload 1"]]
    second = time.strftime("%H:%M:%S", time.localtime((T0 + pd.Timedelta(seconds=21)).timestamp()))
    assert groups[0][2][1].label == f"Workload 1 · 1 run · launch bbbb2222 · {second}"


def test_filter_by_name_param_or_tag_value() -> None:
    rows = {r["run_id"]: r for r in _frame().to_dict("records")}
    assert picker.matches(rows["c1a"], "")
    assert picker.matches(rows["plain"], "NOTEBOOK")
    assert picker.matches(rows["c1b"], "batch-size=256")
    assert not picker.matches(rows["c1a"], "batch-size=256")
    assert picker.matches(rows["c2a"], "radtrack.collocation=mps")
    assert picker.matches(rows["c2a"], "mps")
    assert not picker.matches(rows["c1a"], "mps")


def test_ages_and_durations_read_like_a_person_would_say_them() -> None:
    now = 1_000_000.0
    assert picker.ago(now - 5, now) == "just now"
    assert picker.ago(now - 125, now) == "2 minutes ago"
    assert picker.ago(now - 3 * 86400 - 10, now) == "3 days ago"
    assert picker.ago(now - 3600, now) == "1 hour ago"
    assert picker.duration_text(12.34) == "12.3 s"
    assert picker.duration_text(75) == "1m 15s"
    assert picker.duration_text(3 * 3600 + 62) == "3h 01m"
    assert picker.duration_text(float("nan")) == "-"


def test_run_row_carries_checkbox_status_and_an_info_popover() -> None:
    row = _frame().to_dict("records")[1]
    shown = picker.run_row(row, checked=True, now=T0.timestamp() + 3 * 86400)
    box = shown.children[0]
    assert box.id == {"type": "run-check", "run": "c1b"} and box.value == ["c1b"]
    text = str(shown.to_plotly_json())
    assert "finished" in text and "3 days ago" in text and "1m 15s" in text
    assert "param.batch-size" in text and "256" in text
    assert picker.run_row(row, checked=False).children[0].value == []


def _script(run_id: str, row: str | None, minutes: int = 0, **extra: str) -> dict:
    tags = {"tag.radtrack.row_run": row} if row else {}
    return _row(run_id, "script", minutes=minutes, **tags, **extra)


def test_script_runs_are_listed_under_their_row_never_as_rows_of_their_own() -> None:
    frame = pd.concat([_frame(), pd.DataFrame([
        _script("trial1", "c1a", minutes=2, name="trial-1"),
        _script("trial0", "c1a", minutes=1, name="trial-0"),
        # nested inside trial-0 (its MLflow parent is the script's run, not a workload)
        _script("eval0", "c1a", minutes=1, name="eval", parent_run_id="trial0"),
    ])], ignore_index=True)
    frame.loc[frame["run_id"] == "c1a", "tag.radtrack.script_runs"] = "trial0,eval0,trial1,gone"
    found = picker.workloads(frame)
    assert [w.key for w in found] == ["run:plain", "p2", "p1"]  # no workload of script runs
    one = found[2]
    assert one.run_ids == ["c1a", "c1b"] and one.scripts == {"c1a": ["trial0", "eval0", "trial1"]}
    assert [r for r, _ in one.listed()] == ["c1a", "trial0", "eval0", "trial1", "c1b"]
    assert one.label.startswith("Workload 1 · 2 runs + 3 script runs")
    assert picker.linked_ids(frame.to_dict("records")) == ["gone"]  # read by id, elsewhere


def test_a_script_run_in_another_experiment_is_found_through_its_rows_tag() -> None:
    frame = _frame()
    frame.loc[frame["run_id"] == "c2a", "tag.radtrack.script_runs"] = "far"
    records = frame.to_dict("records")
    assert picker.linked_ids(records) == ["far"]
    far = _script("far", "c2a", minutes=11, name="pl-run", experiment="pl-exp")
    w2 = next(w for w in picker.workloads(records, [far]) if w.key == "p2")
    assert w2.scripts == {"c2a": ["far"]}
    shown = picker.run_row(far, checked=False, row_experiment="exp")
    assert shown.className == "run-row script-run"
    assert shown.children[0].options[0]["label"] == "↳ pl-run · pl-exp"


def test_in_the_scripts_own_experiment_its_row_is_listed_with_it() -> None:
    row = _row("c1a", "row", "p1", 1, "A", name="exp-1 A", experiment="exp",
               **{"tag.radtrack.script_runs": "mine,sib"})
    mine = [_script("mine", "c1a", minutes=1, name="trial-0", experiment="pl-exp")]
    assert picker.linked_ids(mine) == ["c1a"]
    sib = _script("sib", "c1a", minutes=2, name="trial-1", experiment="third")
    found = picker.workloads(mine, [row, sib])
    assert [(w.key, w.run_ids, w.scripts) for w in found] == [
        ("row:c1a", ["c1a"], {"c1a": ["mine", "sib"]})]
    assert found[0].label.startswith("exp-1 A (row run in exp) · 1 run + 2 script runs")
    # a script run whose row is nowhere to be found is still listed, on its own
    assert [w.key for w in picker.workloads(mine)] == ["run:mine"]


def test_metric_search_takes_words_in_any_order_and_says_when_nothing_matches() -> None:
    from radtrack.frontend.callbacks_chart import HEADER_PREFIX, metric_options

    keys = ["smi/gpu0/power_w", "smi/gpu5/power_w", "smi/gpu5/temp_c", "loss"]
    found = [o["value"] for o in metric_options(keys, "power GPU5", [])]
    assert found == [HEADER_PREFIX + "smi", "smi/gpu5/power_w"]
    none = metric_options(keys, "gpu9 power", ["loss"])
    assert none[0] == {"label": "no metric matches 'gpu9 power'",
                       "value": HEADER_PREFIX + "no match", "disabled": True}
    assert [o["value"] for o in none[1:]] == [HEADER_PREFIX + "script", "loss"]  # ticked stays
