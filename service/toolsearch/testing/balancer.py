"""nginx as a round-robin load balancer over toolsearch replicas on loopback, for the replicas e2e
and the benchmarks: its configuration, written into a temporary directory, and its command line."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

_TEMP_PATHS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def nginx_binary() -> str | None:
    """Debian's nginx (`/usr/sbin` may be off a non-root PATH), or None when it is not installed."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/bin")


def write_round_robin_config(
    directory: Path, port: int, backends: Sequence[int], *, access_log: bool
) -> Path:
    """nginx.conf in `directory`: listen on 127.0.0.1:`port`, round robin over the `backends` ports.

    With `access_log`, each request's chosen backend and status go to `access.log` (to check the
    spread); without, nothing is logged per request (for throughput measurements). Idle connections
    to the replicas are closed after 4 s, before uvicorn closes them (5 s): else nginx may send a
    request on a connection the replica is closing, and answer 502 to a POST it may not retry.
    """
    os.chmod(directory, 0o755)  # nginx's workers may run as another user when started as root
    servers = "\n".join(f"    server 127.0.0.1:{backend};" for backend in backends)
    temp_paths = "\n".join(f"  {kind}_temp_path {directory / kind};" for kind in _TEMP_PATHS)
    logging = (
        f"  log_format balanced '$upstream_addr $status';\n  access_log {directory / 'access.log'} balanced;"
        if access_log
        else "  access_log off;"
    )
    config = directory / "nginx.conf"
    config.write_text(
        f"""daemon off;
worker_processes 1;
pid {directory / "nginx.pid"};
error_log {directory / "error.log"} warn;
events {{ worker_connections 4096; }}
http {{
{logging}
{temp_paths}
  upstream toolsearch {{
{servers}
    keepalive 128;
    keepalive_timeout 4s;
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://toolsearch;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }}
  }}
}}
"""
    )
    return config


def nginx_command(binary: str, directory: Path, config: Path) -> list[str]:
    """nginx in the foreground with everything it writes inside `directory`."""
    return [binary, "-p", str(directory), "-c", str(config), "-e", str(directory / "error.log")]
