"""ACP v2 keyed prompts at run time, built on the generated `acp_v2_schema` package.

- `acp_v2_runtime.idempotency`: the Agent's key ledger (`KeyLedger`) with memory, SQLite and PostgreSQL stores.
- `acp_v2_runtime.client`: `new_idempotency_key`, the Client's `Resender` and `PendingPrompts`.
- `python -m acp_v2_runtime.validate [FILE]`: checks newline-delimited JSON-RPC messages.
- `python -m acp_v2_runtime.conformance -- AGENT...`: runs the keyed-prompt conformance traces against an Agent.
- `python -m acp_v2_runtime.reference_agent --db FILE`: a small Agent that passes them.

Every rule these follow (key limits, error codes, retry decisions, method names) is read from `acp_v2_schema`,
which is generated from the spec; nothing here restates one.
"""

__version__ = "0.1.0"
