"""The store interface of the key ledger, and the in-memory store.

A store keeps one row per (session, key digest): either *pending* (claimed by an owner until its lease runs out)
or *recorded* (the message is inserted; the row holds its messageId). Every method is atomic on its own, so
that any number of threads, processes or nodes can share one store:

- `claim` takes a free key, takes over a pending key whose lease has run out, or reports who holds it;
- `record` inserts the message (through the caller's `write`) and marks the key recorded, in one step, but only
  while the caller still owns the claim;
- `release` gives a claimed key back unused, as after an error response;
- `renew` extends a lease while pre-insertion work (a hook, a held prompt) goes on;
- `claim_record` (optional) does claim and record in one step when nothing has to happen between them;
- `withdraw` records that a prompt not inserted yet was cancelled (see below);
- `insert` writes a message that carries no key (the caller's `write` in a transaction of the store's).

Withdrawals. Each row counts the withdrawals of its key (`withdrawals`), and every answer about a row says the
count. An attempt notes the count the first time it reaches the store; when the count has grown since, the prompt
was cancelled while the attempt was pending, so the attempt is answered -32800 however the key stands now. The
claim holder's `record` checks the count in the same transaction as its insert, so a withdrawal recorded before
it wins and one recorded after it finds the key recorded. A row whose key was withdrawn is kept (free, with no
owner) when its claim is released, so that the count outlives the claim.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, Protocol

State = Literal["claimed", "recorded", "busy", "withdrawn"]
Write = Callable[[Any, str], None]
"""Inserts the message with the given messageId; called inside the store's transaction with its connection."""

DEFAULT_LEASE_SECONDS = 30.0


class ClaimResult(NamedTuple):
    """The answer to a claim. `message_id` is set when recorded; `fingerprint` is what the row keeps of its prompt:
    the prompt's digest, or in a store that keeps prompts as they are (`lazy_fingerprints`) the prompt itself;
    `withdrawals` is how many times the key's prompt was withdrawn (see the module's notes)."""

    state: State
    message_id: str | None = None
    fingerprint: object = None
    withdrawals: int = 0


INSERTED = ClaimResult("claimed")
"""What `claim_record` answers when it inserted the message, under the messageId the caller gave."""


class RecordResult(NamedTuple):
    """The answer to a record: `inserted` is False when the key was recorded already or the claim was lost;
    `withdrawn` is True when the prompt was withdrawn after the claimer first saw the key (nothing was inserted)."""

    inserted: bool
    message_id: str | None
    withdrawn: bool = False


class LedgerStore(Protocol):
    """What the ledger needs from storage. Keys arrive as digests (the `digest` arguments), except in a store that
    says `keeps_keys = True`: its rows never leave the process, so they are filed under the checked key itself."""

    lease_seconds: float

    # `fingerprint` is the prompt's digest, or the prompt itself for a store that says `lazy_fingerprints = True`.
    def claim(self, session_id: str, digest: str, owner: str, fingerprint: object) -> ClaimResult: ...

    # `seen`: the withdrawal count the claimer first saw; a larger count now means withdrawn, and nothing is written.
    def record(
        self, session_id: str, digest: str, owner: str, message_id: str, write: Write | None, seen: int | None = None
    ) -> RecordResult: ...

    def release(self, session_id: str, digest: str, owner: str) -> None: ...

    # Count a withdrawal of the key's prompt unless it is recorded (then answer "recorded"); frees `owner`'s claim.
    def withdraw(self, session_id: str, digest: str, owner: str) -> ClaimResult: ...

    # Optional: claim and record in one step, for a prompt inserted as soon as it arrives. Answers INSERTED
    # (inserted now, under `message_id`), "recorded" (inserted before) or "busy" (another owner holds a claim).
    # def claim_record(self, session_id, digest, message_id, fingerprint, write) -> ClaimResult: ...

    def insert(self, message_id: str, write: Write) -> None: ...

    def renew(self, session_id: str, digest: str, owner: str) -> bool: ...

    def lookup(self, session_id: str, digest: str) -> str | None: ...

    def forget_session(self, session_id: str) -> None: ...

    def close(self) -> None: ...


# A memory row is a plain tuple (cheap to make): (state, owner, lease until, prompt, messageId, withdrawals); a free
# row (a withdrawn key whose claim was given back) is pending with no owner. Rows are grouped
# per session under their digest, so that no (session, digest) tuple is made and kept for each key: every object a
# keyed prompt leaves behind is one more for the garbage collector to walk through, again and again.
_Row = tuple[str, "str | None", float, object, "str | None", int]
_PENDING, _RECORDED = "pending", "recorded"


class MemoryStore:
    """Keys in a dict under a lock: for live-only messages and for tests. Lost when the process ends.

    A row keeps the prompt it was recorded with, as it is (the same object as the inserted message's content), and
    gives it back when a retry comes to compare; the ledger digests it then, so a prompt that is never retried is
    never digested. Live-only messages keep their content in memory anyway.
    """

    blocking = False  # the ledger calls it directly, not from a worker thread
    keeps_keys = True  # rows live in this process only: the ledger files them under the key, with no digest to make
    lazy_fingerprints = True  # rows keep the prompt itself: the ledger digests it only to compare

    def __init__(self, *, lease_seconds: float = DEFAULT_LEASE_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.lease_seconds = lease_seconds
        self._clock = clock
        self._sessions: dict[str, dict[str, _Row]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryStore({sum(map(len, self._sessions.values()))} keys)"

    def _rows(self, session_id: str) -> dict[str, _Row]:
        rows = self._sessions.get(session_id)
        if rows is None:
            rows = self._sessions[session_id] = {}
        return rows

    def claim(self, session_id: str, digest: str, owner: str, fingerprint: object) -> ClaimResult:
        now = self._clock()
        with self._lock:
            rows = self._rows(session_id)
            row = rows.get(digest)
            if row is None or (row[0] == _PENDING and (row[1] is None or row[1] == owner or row[2] <= now)):
                count = row[5] if row is not None else 0
                rows[digest] = (_PENDING, owner, now + self.lease_seconds, fingerprint, None, count)
                return ClaimResult("claimed", None, fingerprint, count)
            return ClaimResult("recorded" if row[0] == _RECORDED else "busy", row[4], row[3], row[5])

    def claim_record(
        self,
        session_id: str,
        digest: str,
        message_id: str,
        fingerprint: object,
        write: Write | None,
    ) -> ClaimResult:
        new = (_RECORDED, None, 0.0, fingerprint, message_id, 0)
        with self._lock:  # every method holds the lock, so nobody sees the row before the write is done
            rows = self._sessions.get(session_id)
            if rows is None:
                rows = self._sessions[session_id] = {}
            row = rows.setdefault(digest, new)
            if row is new:
                if write is not None:
                    try:
                        write(None, message_id)
                    except BaseException:
                        del rows[digest]
                        raise
                return INSERTED
            return ClaimResult("recorded" if row[0] == _RECORDED else "busy", row[4], row[3], row[5])

    def record(
        self,
        session_id: str,
        digest: str,
        owner: str,
        message_id: str,
        write: Write | None,
        seen: int | None = None,
    ) -> RecordResult:
        with self._lock:
            rows = self._rows(session_id)
            row = rows.get(digest)
            if row is not None and row[0] == _RECORDED:
                return RecordResult(False, row[4])
            if row is None or row[1] != owner:
                return RecordResult(False, None)
            if seen is not None and row[5] > seen:  # withdrawn since the claimer first saw the key: give it back
                rows[digest] = (_PENDING, None, 0.0, row[3], None, row[5])
                return RecordResult(False, None, withdrawn=True)
            if write is not None:
                write(None, message_id)
            rows[digest] = (_RECORDED, None, 0.0, row[3], message_id, row[5])
            return RecordResult(True, message_id)

    def insert(self, message_id: str, write: Write) -> None:
        with self._lock:  # as claim_record does, so that a keyed and an unkeyed insert cost the same lock
            write(None, message_id)

    def release(self, session_id: str, digest: str, owner: str) -> None:
        with self._lock:
            rows = self._sessions.get(session_id, {})
            row = rows.get(digest)
            if row is not None and row[0] == _PENDING and row[1] == owner:
                if row[5]:
                    rows[digest] = (_PENDING, None, 0.0, row[3], None, row[5])  # keep the withdrawal count
                else:
                    del rows[digest]

    def withdraw(self, session_id: str, digest: str, owner: str) -> ClaimResult:
        with self._lock:
            rows = self._rows(session_id)
            row = rows.get(digest)
            if row is not None and row[0] == _RECORDED:
                return ClaimResult("recorded", row[4], row[3], row[5])
            if row is None:
                row = (_PENDING, None, 0.0, None, None, 0)
            elif row[1] == owner:
                row = (_PENDING, None, 0.0, row[3], None, row[5])  # our own claim: given back with the withdrawal
            count = row[5] + 1
            rows[digest] = (*row[:5], count)
            return ClaimResult("withdrawn", None, None, count)

    def renew(self, session_id: str, digest: str, owner: str) -> bool:
        with self._lock:
            rows = self._sessions.get(session_id, {})
            row = rows.get(digest)
            if row is None or row[0] != _PENDING or row[1] != owner:
                return False
            rows[digest] = (_PENDING, owner, self._clock() + self.lease_seconds, row[3], None, row[5])
            return True

    def lookup(self, session_id: str, digest: str) -> str | None:
        with self._lock:
            row = self._sessions.get(session_id, {}).get(digest)
            return row[4] if row is not None else None

    def forget_session(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def close(self) -> None:
        """Nothing to close; present so that every store can be used the same way."""
