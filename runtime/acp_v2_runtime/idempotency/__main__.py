"""`python -m acp_v2_runtime.idempotency`: print the diagram of a key's states, drawn from the table in `states`, for
the helpers page (whose diagram a test holds equal to it)."""

from .states import mermaid

print(mermaid(), end="")
