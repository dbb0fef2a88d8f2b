"""Odd session ids on every store: each is either kept exactly like any other id, or refused with the ledger's
own InvalidSessionId (-32602) before a store sees it. No store-specific exception (sqlite3, psycopg, a
UnicodeEncodeError from a driver) ever comes out, and every store gives the same verdict.
"""

from __future__ import annotations

import asyncio
import random
import string
import unicodedata
import uuid

import pytest
from acp_v2_schema.retry import IDEMPOTENCY_KEY_MAX_LENGTH
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_v2_runtime.idempotency import (
    INVALID_PARAMS,
    MAX_SESSION_ID_BYTES,
    InvalidKey,
    InvalidSessionId,
    KeyLedger,
    LedgerError,
)

PROMPT = [{"type": "text", "text": "hello"}]
_RANDOM = random.Random(11)  # fixed: the same incompressible text on every run
NOISE = "".join(_RANDOM.choice(string.ascii_letters + string.digits) for _ in range(100_000))

# Ids every store keeps as they are (a scope like any other).
KEPT = {
    "empty": "",
    "one-space": " ",
    "trailing-space": "sess ",
    "at-the-byte-limit-ascii": NOISE[:MAX_SESSION_ID_BYTES],
    "at-the-byte-limit-emoji": "😀" * (MAX_SESSION_ID_BYTES // 4),
    "emoji": "sess_😀",
    "newline-and-tab": "a\nb\tc",
    "sql-quote": "'; DROP TABLE acp_idempotency_keys; --",
    "placeholders": "%s %(s)s ? $1 :name",
    "backslashes": "\\\\x00\\",
    "line-separator": "a\u2028b",
    "byte-order-mark": "\ufeffsess",
    "noncharacter": "\uffff\U0010ffff",
    "decomposed-accent": unicodedata.normalize("NFD", "sessé"),
    "right-to-left": "\u202eabc",
}
# Ids refused with InvalidSessionId, and the words its reason must contain.
REFUSED = {
    "one-byte-over-the-limit": (NOISE[: MAX_SESSION_ID_BYTES + 1], "bytes long"),
    "very-long-incompressible": (NOISE, "bytes long"),
    "nul-only": ("\x00", "NUL"),
    "nul-inside": ("a\x00b", "NUL"),
    "lone-high-surrogate": ("\ud800", "surrogate"),
    "lone-low-surrogate": ("a\udfff", "surrogate"),
    "surrogate-pair-halves": ("\ud83d\ude00", "surrogate"),
    "integer": (5, "string"),
    "float": (5.0, "string"),
    "nan": (float("nan"), "string"),
    "boolean": (True, "string"),
    "none": (None, "string"),
    "bytes": (b"sess", "string"),
    "list": (["sess"], "string"),
    "dict": ({"id": "sess"}, "string"),
    "tuple": (("sess",), "string"),
}


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("name", sorted(KEPT))
def test_odd_session_id_is_kept_like_any_other(store_factory, name):
    session_id = KEPT[name]
    key = f"k-{uuid.uuid4()}"  # unique per run: the PostgreSQL database outlives the test
    inserted: list[str] = []
    write = lambda _conn, mid: inserted.append(mid)  # noqa: E731 - one line

    async def go():
        ledger = KeyLedger(store_factory())
        first = await ledger.submit(session_id, key, 1, prompt=PROMPT, write=write)
        again = await ledger.submit(session_id, key, 2, prompt=PROMPT, write=write)
        # A second ledger on the same storage reads the id back from the store, as a restarted Agent would.
        other = await KeyLedger(store_factory()).submit(session_id, key, 3, prompt=PROMPT, write=write)
        return first, again, other, await ledger.lookup(session_id, key)

    first, again, other, looked_up = run(go())
    assert first == again == other == looked_up and inserted == [first]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_odd_session_id_is_refused_with_the_ledgers_error(store_factory, name):
    session_id, reason = REFUSED[name]
    inserted: list[str] = []
    ledger = KeyLedger(store_factory())

    async def go():
        with pytest.raises(InvalidSessionId) as submitted:
            await ledger.submit(session_id, "k", 1, prompt=PROMPT, write=lambda _c, m: inserted.append(m))
        with pytest.raises(InvalidSessionId):
            await ledger.lookup(session_id, "k")
        return submitted.value

    error = run(go())
    assert isinstance(error, LedgerError) and error.code == INVALID_PARAMS and reason in error.message
    assert inserted == [] and ledger.pending_count() == 0
    assert ledger.cancel_session(session_id) == 0  # nothing can be pending under an id that is refused
    if isinstance(session_id, str) and len(session_id) > 8:
        assert session_id not in error.message  # the error never repeats the id


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("sess", "sess "),
        ("sess", "SESS"),
        (unicodedata.normalize("NFC", "sessé"), unicodedata.normalize("NFD", "sessé")),
        ("", " "),
    ],
    ids=["trailing-space", "case", "unicode-normalization", "empty-and-space"],
)
def test_ids_that_look_alike_are_separate_scopes(store_factory, first, second):
    """No store pads, folds case or normalizes: the same key under two such ids inserts twice."""
    key = f"k-{uuid.uuid4()}"

    async def go():
        ledger = KeyLedger(store_factory())
        return await ledger.submit(first, key, 1), await ledger.submit(second, key, 2)

    a, b = run(go())
    assert a != b


TOO_LONG = "k" * (IDEMPOTENCY_KEY_MAX_LENGTH + 1)  # one code point over the spec's bound


@pytest.mark.parametrize("key", ["", TOO_LONG, 5, True, ["k"], {"k": 1}, "\ud800"], ids=repr)
def test_lookup_with_a_malformed_key_raises_invalid_key(store_factory, key):
    ledger = KeyLedger(store_factory())
    with pytest.raises(InvalidKey):
        run(ledger.lookup("sess", key))


def test_lookup_without_a_key_finds_nothing(store_factory):
    assert run(KeyLedger(store_factory()).lookup("sess", None)) is None


def test_any_text_is_kept_or_refused_with_the_ledgers_error(store_factory):
    """Random session ids (any code point, surrogates and NUL included): a messageId or InvalidSessionId."""
    store = store_factory()
    key = f"k-{uuid.uuid4()}"
    outcomes: list[str] = []

    @settings(max_examples=40, deadline=None, database=None)
    @given(st.text(max_size=300) | st.binary(max_size=8) | st.integers() | st.none())
    def check(session_id):
        ledger = KeyLedger(store)
        try:
            first = run(ledger.submit(session_id, key, 1))
        except InvalidSessionId:
            outcomes.append("refused")
            return
        assert run(ledger.submit(session_id, key, 2)) == first == run(ledger.lookup(session_id, key))
        outcomes.append("kept")

    check()
    assert "kept" in outcomes
