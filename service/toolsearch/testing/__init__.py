"""Real servers on loopback for tests, benchmarks and the demo, each stopped when its `with` ends.

- `DemoUpstream`: an MCP server (the `mcp` SDK's) serving recorded tool definitions with canned
  results, with a switch for everything a proxy in front of it must cope with (`upstream`, `canned`);
- `serve_app`, `serve_process`, `serve_proxy_process`: an ASGI app in a thread, a command or the
  proxy as a subprocess, on a free port (`serving`);
- `RedisServer`, `RedisClusterServer`: a throwaway `redis-server`, or a Redis Cluster of them
  (`redis_server`);
- nginx as a round-robin balancer over replicas (`balancer`).

Import them from here: `from toolsearch.testing import DemoUpstream, serve_app`.
"""

from toolsearch.testing.balancer import nginx_binary, nginx_command, write_round_robin_config
from toolsearch.testing.canned import CANNED_LABEL, canned_result, example_arguments
from toolsearch.testing.recorded import DEMO_SERVERS, recorded_tools
from toolsearch.testing.redis_server import (
    RedisClusterServer,
    RedisServer,
    redis_cli_binary,
    redis_server_binary,
)
from toolsearch.testing.serving import (
    ServedProcess,
    base_url,
    free_port,
    proxy_command,
    serve_app,
    serve_process,
    serve_proxy_process,
    stop_process,
)
from toolsearch.testing.upstream import (
    CallHook,
    CallOutcome,
    DemoUpstream,
    RecordedCall,
    RecordedRequest,
    RequestHook,
    Visibility,
    bearer_visibility,
)

__all__ = [
    "CANNED_LABEL",
    "DEMO_SERVERS",
    "CallHook",
    "CallOutcome",
    "DemoUpstream",
    "RecordedCall",
    "RecordedRequest",
    "RedisClusterServer",
    "RedisServer",
    "RequestHook",
    "ServedProcess",
    "Visibility",
    "base_url",
    "bearer_visibility",
    "canned_result",
    "example_arguments",
    "free_port",
    "nginx_binary",
    "nginx_command",
    "proxy_command",
    "recorded_tools",
    "redis_cli_binary",
    "redis_server_binary",
    "serve_app",
    "serve_process",
    "serve_proxy_process",
    "stop_process",
    "write_round_robin_config",
]
