"""A fault proxy for ACP's remote transport: it forwards Streamable HTTP and WebSocket to one upstream endpoint
(httpx, httpx-sse and websockets under uvicorn; it parses no HTTP of its own) and, armed for the next
`session/prompt`, makes one ambiguous failure between a Client and an Agent on purpose.

    with running_proxy("http://127.0.0.1:8000/acp") as proxy:
        armed = proxy.arm(Fault.POST_502, "http")
        ...  # a Client prompts through proxy.url
        armed.wait(30)
        armed.message_id, armed.told   # what the Agent answered; what the Client was told instead

The modules, one per concern: `faults` (the faults, what each means, the plan that arms them), `watches` (prompts
waiting for their answer), `http_relay` and `ws_relay` (one per profile), `asgi` (the ASGI plumbing they share),
`app` (the ASGI app and its control knob), `serve` (uvicorn, in a thread or as a command: `__main__`).
Needs the `remote` extra of acp-v2-runtime.
"""

from __future__ import annotations

from .app import CONTROL, FaultProxy
from .faults import APPLIES_TO, HTTP, MEANING, PROFILES, WEBSOCKET, Armed, Fault, FaultPlan
from .serve import RunningProxy, running_proxy

__all__ = [
    "APPLIES_TO",
    "CONTROL",
    "HTTP",
    "MEANING",
    "PROFILES",
    "WEBSOCKET",
    "Armed",
    "Fault",
    "FaultPlan",
    "FaultProxy",
    "RunningProxy",
    "running_proxy",
]
