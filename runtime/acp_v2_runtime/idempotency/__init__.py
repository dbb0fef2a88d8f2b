"""The Agent's key ledger for keyed `session/prompt`: at most one inserted message per (session, key).

    from acp_v2_runtime.idempotency import KeyLedger, SQLiteStore

    ledger = KeyLedger(SQLiteStore("agent.db"))
    message_id = await ledger.submit(session_id, params.get("idempotencyKey"), attempt=(conn_id, request_id),
                                     prompt=params["prompt"], write=insert_message)
    if message_id.inserted:   # this attempt inserted it (a retry did not): start the turn
        ...

Stores: `MemoryStore` (live-only messages), `SQLiteStore` (one file, many processes), `PostgresStore` (many
nodes; needs the `postgresql` extra). See `ledger` for the rules and `store` for the interface.
"""

from .keys import (
    INVALID_PARAMS,
    MAX_SESSION_ID_BYTES,
    REQUEST_CANCELLED,
    Cancelled,
    InvalidKey,
    InvalidSessionId,
    KeyReused,
    LedgerError,
    StoreUnavailable,
    derive_message_id,
    key_digest,
    prompt_fingerprint,
    validate_key,
    validate_session_id,
)
from .ledger import KeyLedger, Submitted
from .sqlite import SQLiteStore
from .store import DEFAULT_LEASE_SECONDS, ClaimResult, LedgerStore, MemoryStore, RecordResult


def __getattr__(name: str) -> object:
    if name == "PostgresStore":  # imported on first use: it needs psycopg, an optional extra
        from .postgres import PostgresStore

        return PostgresStore
    raise AttributeError(name)


__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "INVALID_PARAMS",
    "MAX_SESSION_ID_BYTES",
    "REQUEST_CANCELLED",
    "Cancelled",
    "ClaimResult",
    "InvalidKey",
    "InvalidSessionId",
    "KeyLedger",
    "KeyReused",
    "LedgerError",
    "LedgerStore",
    "MemoryStore",
    "PostgresStore",
    "RecordResult",
    "SQLiteStore",
    "StoreUnavailable",
    "Submitted",
    "derive_message_id",
    "key_digest",
    "prompt_fingerprint",
    "validate_key",
    "validate_session_id",
]
