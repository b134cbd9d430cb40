"""An MLflow tracking server (``http(s)://``) through its REST API, for the launcher's common path.

The calls of ``MlflowClient`` the launcher makes, each one request of MLflow's REST API 2.0
(``/api/2.0/mlflow/...``) sent with urllib and the headers MLflow's client would send
(radtrack/store/credentials.py: basic auth, a token, TLS settings), so the launcher never
imports MLflow (about 2 CPU-s on a 2-core VM). Artifacts go through the server's proxy
(``mlflow-artifacts:`` URIs, ``PUT /api/2.0/mlflow-artifacts/artifacts/...``); a run whose
artifacts live elsewhere (s3://, a path on the server's host) and a search filter this
module does not read are left to MLflow's own client (:meth:`RestClient.mlflow`).
An error answer raises :class:`~radtrack.store.entities.StoreError` with the server's
error code; no answer raises ``ConnectionError`` (the store is away: the sink keeps
everything spooled and retries, radtrack/store/outage.py).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from radtrack.errors import RadtrackError
from radtrack.store import credentials
from radtrack.store.entities import (
    Experiment,
    FileInfo,
    Metric,
    Page,
    Run,
    RunData,
    RunInfo,
    StoreError,
)
from radtrack.store.light_client import LightClient
from radtrack.store.search_filter import Unsupported, order_ascending, parse

API = "/api/2.0/mlflow/"
ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts/"
TIMEOUT_S = 20.0  # as the launcher's MLflow client had it (MLFLOW_HTTP_REQUEST_TIMEOUT)


def json_number(v: float) -> float | str:
    """A double as MLflow's JSON mapping writes it: non-finite ones as "NaN"/"Infinity"."""
    if v == v and v not in (float("inf"), float("-inf")):
        return v
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")


class RestClient(LightClient):
    """The calls of ``MlflowClient`` the launcher makes, against one tracking server."""

    light = True

    def __init__(self, uri: str, headers: dict[str, str]):
        parts = urlsplit(uri)
        self.uri = uri
        self.base = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1])).rstrip("/")
        self.headers = {**headers, "User-Agent": "radtrack"}
        self._tls = credentials.tls_context() if uri.startswith("https://") else None
        self._mlflow: Any = None
        self._artifact_uris: dict[str, str] = {}  # run id -> artifact URI: no get-run per artifact

    # -- plumbing ---------------------------------------------------------------------------

    def send(self, method: str, path: str, body: Any = None, data: bytes | None = None,
             query: dict[str, Any] | None = None, raw: bool = False) -> Any:
        """One request; the JSON answer ({} for an empty one), or its bytes (``raw``)."""
        url = self.base + path + (f"?{urlencode(query)}" if query else "")
        headers = dict(self.headers)
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S, context=self._tls) as r:
                text = r.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read().decode("utf-8", "replace")
            try:
                err = json.loads(raw)
            except ValueError:
                err = {}
            code = err.get("error_code") or f"HTTP {exc.code}"
            message = err.get("message") or raw[:500]
            if exc.code in (502, 503, 504):  # a proxy in front of a restarting server
                raise ConnectionError(f"API request to {path} failed with status code {exc.code}: "
                                      f"{message}") from None
            raise StoreError(f"{code}: {message}", code) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            raise ConnectionError(f"API request to {path} failed: {reason}") from None
        except (TimeoutError, OSError) as exc:
            raise ConnectionError(f"API request to {path} failed: {exc}") from None
        if raw:
            return text
        try:
            answer = json.loads(text) if text.strip() else {}
        except ValueError:
            answer = None
        if not isinstance(answer, dict):  # a login page, another service's answer
            raise self.not_mlflow(method, path, "an answer that is not MLflow's JSON")
        return answer

    def not_mlflow(self, method: str, path: str, what: str) -> RadtrackError:
        """The one-line error for a server that answers, but not as MLflow: nothing is taken
        from such an answer for stored (radtrack/store/reach.py says it before a launch)."""
        from radtrack.store.reach import not_mlflow_line

        return RadtrackError(not_mlflow_line(self.uri, f"{method} {path}", what))

    def field(self, method: str, endpoint: str, key: str, body: Any = None, **query: Any) -> Any:
        """``key`` of the answer to one call, which MLflow always sends (a run, an
        experiment, an id); its absence is no MLflow server's answer."""
        value = self.call(method, endpoint, body, **query).get(key)
        # the id it carries: a run's (in its info), an experiment's, or the id itself
        ids = value.get("info", value) if isinstance(value, dict) else {key: value}
        if not (isinstance(ids, dict) and any(ids.get(k) for k in ("run_id", "run_uuid", "experiment_id"))):
            raise self.not_mlflow(method, API + endpoint, f"no {key!r} in its answer")
        return value

    def call(self, method: str, endpoint: str, body: Any = None, **query: Any) -> dict[str, Any]:
        return self.send(method, API + endpoint, body=body, query=query or None)

    # -- experiments ------------------------------------------------------------------------

    def get_experiment_by_name(self, name: str) -> Experiment | None:
        try:
            return _experiment(self.field("GET", "experiments/get-by-name", "experiment", experiment_name=name))
        except StoreError as exc:
            if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise

    def get_experiment(self, experiment_id: str) -> Experiment:
        return _experiment(self.field("GET", "experiments/get", "experiment", experiment_id=experiment_id))

    def create_experiment(self, name: str, artifact_location: str | None = None) -> str:
        body = {"name": name, **({"artifact_location": artifact_location} if artifact_location else {})}
        return str(self.field("POST", "experiments/create", "experiment_id", body))

    def search_experiments(self, **kwargs: Any) -> list[Experiment]:
        if kwargs:  # a view of deleted ones too: a reader's error message only
            return self.mlflow().search_experiments(**kwargs)
        out: list[Experiment] = []
        token = None
        while True:
            answer = self.call("POST", "experiments/search", {"max_results": 1000, "view_type": "ACTIVE_ONLY",
                                                              **({"page_token": token} if token else {})})
            out += [_experiment(e) for e in answer.get("experiments", [])]
            token = answer.get("next_page_token")
            if not token:
                return out

    # -- runs -------------------------------------------------------------------------------

    def create_run(self, experiment_id: str, start_time: int | None = None,
                   tags: dict[str, str] | None = None, run_name: str | None = None) -> Run:
        import time

        tags = dict(tags or {})
        body: dict[str, Any] = {"experiment_id": str(experiment_id),
                                "user_id": tags.get("mlflow.user", "unknown"),
                                "start_time": start_time or int(time.time() * 1000),
                                "tags": [{"key": k, "value": v} for k, v in tags.items()]}
        if run_name:
            body["run_name"] = run_name
        return self._known(_run(self.field("POST", "runs/create", "run", body)))

    def get_run(self, run_id: str) -> Run:
        return self._known(_run(self.field("GET", "runs/get", "run", run_id=run_id)))

    def _known(self, run: Run) -> Run:
        self._artifact_uris[run.info.run_id] = run.info.artifact_uri
        return run

    def search_runs(self, experiment_ids: Iterable[str], filter_string: str = "",
                    max_results: int = 1000, page_token: str | None = None,
                    order_by: list[str] | None = None, **_: Any) -> Page:
        """Up to ``max_results`` runs from ``page_token`` on, with the token of the rest."""
        ids = [str(i) for i in experiment_ids]
        try:
            parse(filter_string)  # the server reads it; one radtrack knows is one it sends as is
            known = order_ascending(order_by) is not None
        except Unsupported:
            known = False
        if not known:
            return self.mlflow().search_runs(ids, filter_string=filter_string, max_results=max_results,
                                             page_token=page_token, order_by=order_by)
        out = Page()
        token = page_token
        while len(out) < max_results:
            body = {"experiment_ids": ids, "filter": filter_string or "", "run_view_type": "ACTIVE_ONLY",
                    "max_results": min(max_results - len(out), 50000),
                    **({"order_by": list(order_by)} if order_by else {}),
                    **({"page_token": token} if token else {})}
            answer = self.call("POST", "runs/search", body)
            out += [_run(r) for r in answer.get("runs", [])]
            token = answer.get("next_page_token")
            if not token:
                break
        out.token = token or None
        return out

    def get_metric_history(self, run_id: str, key: str) -> list[Metric]:
        """Every point of ``key``, in the server's order (paged as MLflow's client pages)."""
        out: list[Metric] = []
        token = None
        while True:
            answer = self.call("GET", "metrics/get-history", run_id=run_id, metric_key=key,
                               max_results=25000, **({"page_token": token} if token else {}))
            out += [Metric(key, _number(m.get("value", 0)), int(m.get("timestamp", 0)), int(m.get("step", 0)))
                    for m in answer.get("metrics", [])]
            token = answer.get("next_page_token")
            if not token:
                return out

    def update_run(self, run_id: str, status: str | None = None, name: str | None = None) -> None:
        body: dict[str, Any] = {"run_id": run_id, "run_uuid": run_id}
        if status:
            body["status"] = status
        if name:
            body["run_name"] = name
        self.call("POST", "runs/update", body)

    def set_terminated(self, run_id: str, status: str = "FINISHED", end_time: int | None = None) -> None:
        import time

        self.call("POST", "runs/update", {"run_id": run_id, "run_uuid": run_id, "status": status,
                                          "end_time": end_time or int(time.time() * 1000)})

    def set_tag(self, run_id: str, key: str, value: Any) -> None:
        self.call("POST", "runs/set-tag", {"run_id": run_id, "run_uuid": run_id, "key": key,
                                           "value": str(value)})

    def log_batch(self, run_id: str, metrics: Sequence[Any] = (), params: Sequence[Any] = (),
                  tags: Sequence[Any] = ()) -> None:
        if not (metrics or params or tags):
            return
        self.call("POST", "runs/log-batch", {
            "run_id": run_id,
            "metrics": [{"key": m.key, "value": json_number(float(m.value)), "timestamp": int(m.timestamp),
                         "step": int(m.step or 0)} for m in metrics],
            "params": [{"key": p.key, "value": str(p.value)} for p in params],
            "tags": [{"key": t.key, "value": str(t.value)} for t in tags]})

    def log_metrics(self, run_id: str, points: list[tuple[str, float, int, int]]) -> None:
        """Up to 1000 (key, value, timestamp ms, step) points in one call (the sink's path)."""
        if points:
            self.call("POST", "runs/log-batch", {
                "run_id": run_id, "metrics": [{"key": k, "value": json_number(v), "timestamp": t, "step": s}
                                              for k, v, t, s in points]})

    # -- artifacts --------------------------------------------------------------------------

    def _proxied(self, run_id: str) -> str | None:
        """The run's artifact folder behind the server's proxy ("<exp>/<run>/artifacts");
        None where the run keeps its artifacts elsewhere."""
        uri = self._artifact_uris.get(run_id) or self.get_run(run_id).info.artifact_uri
        if not uri.startswith("mlflow-artifacts:"):
            return None
        rest = urlsplit(uri)
        if rest.netloc:  # mlflow-artifacts://host:port/...: another server than this one
            return None
        return rest.path.strip("/")

    def _upload(self, where: str, local: Path) -> None:
        self.send("PUT", ARTIFACTS_API + quote(where), data=local.read_bytes())

    def log_artifact(self, run_id: str, local_path: str, artifact_path: str | None = None) -> None:
        base = self._proxied(run_id)
        if base is None:
            self.mlflow().log_artifact(run_id, local_path, artifact_path)
            return
        local = Path(local_path)
        self._upload("/".join(filter(None, [base, artifact_path, local.name])), local)

    def list_artifacts(self, run_id: str, path: str | None = None) -> list[FileInfo]:
        base = self._proxied(run_id)
        if base is None:
            return self.mlflow().list_artifacts(run_id, path)
        where = "/".join(filter(None, [base, (path or "").strip("/")]))
        answer = self.send("GET", ARTIFACTS_API.rstrip("/"), query={"path": where})
        prefix = f"{path.strip('/')}/" if path else ""
        return [FileInfo(prefix + f["path"], bool(f.get("is_dir")),
                         int(f["file_size"]) if f.get("file_size") is not None else None)
                for f in answer.get("files", [])]

    def download_artifacts(self, run_id: str, path: str, dst_path: str | None = None) -> str:
        """The file (or folder) at ``path`` into ``dst_path``/``path`` through the proxy."""
        base = self._proxied(run_id)
        if base is None:
            return self.mlflow().download_artifacts(run_id, path, dst_path)
        import tempfile

        root = dst_path or tempfile.mkdtemp(prefix="radtrack-artifacts-")
        out = Path(root) / path
        entries = self.list_artifacts(run_id, path)  # a file lists nothing, a folder its entries
        if entries:
            for entry in entries:
                self.download_artifacts(run_id, entry.path, root)
            return str(out)
        data = self.send("GET", ARTIFACTS_API + quote(f"{base}/{path.strip('/')}"), raw=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        return str(out)

    def log_artifacts(self, run_id: str, local_dir: str, artifact_path: str | None = None) -> None:
        base = self._proxied(run_id)
        if base is None:
            self.mlflow().log_artifacts(run_id, local_dir, artifact_path)
            return
        root = Path(local_dir)
        for dirpath, _dirs, files in os.walk(root):
            for name in sorted(files):
                path = Path(dirpath) / name
                rel = path.relative_to(root).as_posix()
                self._upload("/".join(filter(None, [base, artifact_path, rel])), path)


def _experiment(e: dict[str, Any]) -> Experiment:
    return Experiment(str(e["experiment_id"]), e.get("name", ""), e.get("artifact_location", ""),
                      e.get("lifecycle_stage", "active"),
                      {t["key"]: t.get("value", "") for t in e.get("tags", [])})


def _number(v: Any) -> float:
    return float(v)  # "NaN", "Infinity" and numbers alike


def _run(r: dict[str, Any]) -> Run:
    info, data = r.get("info", {}), r.get("data", {})
    start, end = info.get("start_time"), info.get("end_time")
    return Run(RunInfo(info.get("run_id") or info.get("run_uuid", ""), info.get("run_name", ""),
                       str(info.get("experiment_id", "")), info.get("user_id", ""), info.get("status", ""),
                       int(start) if start is not None else None, int(end) if end is not None else None,
                       info.get("artifact_uri", ""), info.get("lifecycle_stage", "active")),
               RunData(params={p["key"]: p.get("value", "") for p in data.get("params", [])},
                       tags={t["key"]: t.get("value", "") for t in data.get("tags", [])},
                       metrics={m["key"]: _number(m.get("value", 0)) for m in data.get("metrics", [])}))
