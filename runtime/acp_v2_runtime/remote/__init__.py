"""ACP's remote transport (Streamable HTTP and WebSocket), as the TypeScript SDK 2.4.0 speaks it.

`AcpServer` serves an Agent (an ASGI app; `serve` runs it alone), with `Limits` per connection. The server module's
docstring says how an Agent plugs in and what each request is answered. `RemoteClient` connects to one
(reconnecting, resuming and resending keyed prompts), over `HttpConnection` or `WebSocketConnection`.
"""

from .client import RemoteClient
from .connections import AgentConnection, AgentFactory, Send
from .http_client import HttpConnection
from .limits import Limits
from .serve import serve
from .server import AcpServer
from .ws_client import WebSocketConnection

__all__ = [
    "AcpServer",
    "AgentConnection",
    "AgentFactory",
    "HttpConnection",
    "Limits",
    "RemoteClient",
    "Send",
    "WebSocketConnection",
    "serve",
]
