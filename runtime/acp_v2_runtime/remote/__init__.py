"""ACP's remote transport (Streamable HTTP and WebSocket), as the TypeScript SDK 2.4.0 speaks it.

`AcpServer` serves an Agent (an ASGI app; `serve` runs it alone), with `Limits` per connection. The server module's
docstring says how an Agent plugs in and what each request is answered.
"""

from .connections import AgentConnection, AgentFactory, Send
from .limits import Limits
from .serve import serve
from .server import AcpServer

__all__ = ["AcpServer", "AgentConnection", "AgentFactory", "Limits", "Send", "serve"]
