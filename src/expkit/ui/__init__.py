"""The local web view (``expkit ui``): a read-only server over the run store, eval results and the labs
report. Pages call the library functions the CLI calls, so a page never computes a verdict differently.

    from expkit.ui import UiConfig, serve
    serve(UiConfig(store=Path("runs")), port=8765)
"""

from __future__ import annotations

import socket
import threading
import webbrowser
from collections.abc import Callable

from expkit.ui.server import UiConfig, create_app

__all__ = ["UiConfig", "create_app", "serve"]


def serve(
    config: UiConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    open_browser: bool = False,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``config`` with uvicorn until interrupted. ``port=0`` takes any free port; ``on_ready`` gets the
    URL once the socket is bound (before the first request can arrive).

    Raises:
        UsageError: the address cannot be bound (the port is in use, the address is not this machine's).
    """
    import uvicorn

    from expkit.errors import UsageError

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host} port {port}: {exc.strerror or exc}",
            hint="choose another --port (0: any free port) or an address of this machine",
        ) from None
    bound = sock.getsockname()[1]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}/runs"
    if on_ready is not None:
        on_ready(url)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", access_log=False))
    server.run(sockets=[sock])
