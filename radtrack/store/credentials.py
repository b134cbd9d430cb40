"""Before a launch into a tracking server: is it there, and does it take our credentials?

Both questions are asked before the scripts start, so they must not cost MLflow's import
(1-2 s on the 2-core VM, 2-6 s on a GPU host). They go through urllib with what MLflow's own
client would send (mlflow.utils.credentials, rest_utils.http_request):

- ``Authorization``: a user and password written in the URI (``http://user:pass@host``), else
  ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` (each, where unset, from
  ``~/.mlflow/credentials``), as basic auth, else
  ``MLFLOW_TRACKING_TOKEN`` as a bearer token;
- TLS: ``MLFLOW_TRACKING_INSECURE_TLS`` (no verification), ``MLFLOW_TRACKING_SERVER_CERT_PATH``
  (the CA bundle to trust), ``MLFLOW_TRACKING_CLIENT_CERT_PATH`` (a client certificate).

A user and password in the URI win over the variables, as in MLflow's client (requests puts
them over its header). Where MLflow would decide otherwise (an auth plugin
``MLFLOW_TRACKING_AUTH``, AWS SigV4, a netrc entry for the host, a request-header plugin), :func:`plain` answers None and the caller asks through
MLflow's own client instead.
"""

from __future__ import annotations

import base64
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    import ssl  # imported where a TLS context is made (https only): 9 ms for every launch
    from urllib.request import Request

USERNAME, PASSWORD, TOKEN = "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"
INSECURE_TLS = "MLFLOW_TRACKING_INSECURE_TLS"
SERVER_CERT, CLIENT_CERT = "MLFLOW_TRACKING_SERVER_CERT_PATH", "MLFLOW_TRACKING_CLIENT_CERT_PATH"
_ONLY_MLFLOW = ("MLFLOW_TRACKING_AUTH", "MLFLOW_TRACKING_AWS_SIGV4")  # schemes urllib cannot send
SEARCH = "/api/2.0/mlflow/experiments/search"  # what check_credentials reads: any user may


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def plain(uri: str, plugins: bool = True) -> dict[str, str] | None:
    """The headers MLflow's client would authenticate ``uri``'s requests with ({} for none),
    or None where only MLflow's client can say (see the module's docstring). ``plugins=False``
    leaves out the question whether a request-header plugin is installed (a scan of every
    installed distribution, 20-50 ms with importlib.metadata's import): for a request whose
    acceptance settles it, asked (:func:`header_plugins`) only when the server refuses."""
    if any(_env(v).lower() not in ("", "false", "0") for v in _ONLY_MLFLOW):
        return None
    parts = urlsplit(uri)
    if _netrc_entry(parts.hostname or ""):  # requests sends it over MLflow's header
        return None
    if plugins and header_plugins():  # they may add any header, an Authorization too
        return None
    (user, password), token = user_and_password(), _env(TOKEN)
    if parts.username is not None:  # requests sends the URI's user over MLflow's header
        pair = f"{parts.username}:{parts.password or ''}"
    elif user and password:
        pair = f"{user}:{password}"
    elif token:
        return {"Authorization": f"Bearer {token}"}
    else:
        return {}
    return {"Authorization": "Basic " + base64.standard_b64encode(pair.encode()).decode()}


def user_and_password() -> tuple[str, str]:
    """The basic-auth user and password MLflow's client takes: each from its variable, else
    from ``~/.mlflow/credentials`` (``[mlflow]``: ``mlflow_tracking_username`` and
    ``mlflow_tracking_password``); "" where neither has it."""
    user, password = _env(USERNAME), os.environ.get(PASSWORD, "")
    path = Path.home() / ".mlflow" / "credentials"
    if (not user or not password) and path.exists():
        import configparser

        config = configparser.ConfigParser()
        config.read(path)
        if "mlflow" in config:
            user = user or config["mlflow"].get(USERNAME.lower(), "").strip()
            password = password or config["mlflow"].get(PASSWORD.lower(), "")
    return user, password


def basic_auth_user(uri: str) -> str:
    """The basic-auth user whose permissions a launch into ``uri`` is checked for: "" when
    ``uri`` is no server or no user is set (a token: the server decides)."""
    return user_and_password()[0] if uri.startswith(("http://", "https://")) else ""


def _netrc_entry(host: str) -> bool:
    """Whether a netrc file holds credentials for ``host`` (requests' ``trust_env``); an
    unreadable one counts as holding them (MLflow's client decides)."""
    path = Path(os.environ.get("NETRC") or Path.home() / ".netrc")
    if not path.exists():
        return False
    import netrc

    try:
        return netrc.netrc(str(path)).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return True


@cache
def header_plugins() -> bool:
    """Whether an ``mlflow.request_header_provider`` plugin is installed (the scan of every
    distribution is done once: a launch asks before each of its few requests)."""
    from importlib.metadata import entry_points

    return bool(entry_points(group="mlflow.request_header_provider"))


def tls_context() -> ssl.SSLContext:
    """The TLS settings MLflow's client takes from the environment."""
    import ssl

    if _env(INSECURE_TLS).lower() in ("true", "1"):
        context = ssl._create_unverified_context()  # noqa: S323 - the user asked for it
    else:
        context = ssl.create_default_context(cafile=_env(SERVER_CERT) or None)
    if _env(CLIENT_CERT):
        context.load_cert_chain(_env(CLIENT_CERT))
    return context


def request(uri: str, endpoint: str, headers: dict[str, str] | None = None) -> Request:
    """GET <server><endpoint> without the URI's user info (urllib takes none in a URL)."""
    from urllib.request import Request

    parts = urlsplit(uri)
    url = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1])).rstrip("/") + endpoint
    return Request(url, headers=headers or {})


def status(uri: str, endpoint: str, headers: dict[str, str], timeout: float,
           limit: int | None = 2000) -> tuple[int, str]:
    """(HTTP status, the body: its first ``limit`` bytes, all of it for None) of one
    authenticated GET; OSError when no answer came."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(request(uri, endpoint, headers), timeout=timeout,
                                    context=tls_context() if uri.startswith("https://") else None) as r:
            return r.status, r.read(limit).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(limit).decode("utf-8", "replace")
