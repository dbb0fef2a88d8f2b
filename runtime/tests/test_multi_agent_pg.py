"""Several reference Agents on one PostgreSQL database, the deployment an Agent service grows into.

A private cluster (pg_cluster.py: never the server other tests share) holds one schema per test. Three Agent
processes run on it at once, and a small Client here fails over between them: the same keyed prompt to all three,
the claim holder killed before and after its insertion, the server restarted (fast and immediate) and frozen
(SIGSTOP, then SIGCONT) under load. After each scenario the invariants are checked on the database itself:

- at most one message per key, and every attempt answered with a messageId got the one that was inserted;
- an error answer means the message was never inserted: a key whose every attempt got an error has no message;
- every attempt is answered within a bound (generous: a busy 2-core CI machine);
- every Agent recovers without a restart: after the server is back each one inserts a fresh prompt.

The conformance traces run here too, through the runner, with every connection a separate Agent process on
the same database (a retry on connection B while A lives is a failover between two Agents).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from agent_client import INITIALIZE, agent_command, environment
from pg_cluster import Cluster, shared_cluster

from acp_v2_runtime.conformance import handshake_key, load_traces
from acp_v2_runtime.reference_agent.bounds import FINISH_SECONDS, STORE_WAIT_SECONDS

ANSWER_BOUND = 60.0  # seconds within which every attempt must be answered, whatever happens to the server
LEASE = "2"  # seconds: a killed holder's claim runs out quickly, yet outlives a busy machine's hiccups
HOOKS = handshake_key()
CANCELLED, INTERNAL = -32800, -32603
RECOVERY_TRIES = 40  # attempts of one prompt after the server is back (each may meet another stale connection)


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return shared_cluster()


@pytest.fixture
def url(cluster: Cluster) -> Iterator[str]:
    """A URL whose tables go to a schema of this test's own."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield cluster.url(options=quote(f"-c search_path={schema}", safe=""))
    cluster.thaw()  # whatever a failed test left behind
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


class Agent:
    """One reference Agent process, driven by asyncio: `call` sends a request and awaits its answer."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process, url: str) -> None:
        self.name, self.proc, self.url = name, proc, url
        self.answers: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.updates: list[dict[str, Any]] = []
        self.reader = asyncio.get_running_loop().create_task(self._read())
        self.next_id = 0
        self.waits: list[float] = []  # seconds each `call` waited for its answer

    @classmethod
    async def start(cls, name: str, url: str) -> Agent:
        proc = await asyncio.create_subprocess_exec(
            *agent_command(url, "--lease", LEASE),  # type: ignore[arg-type]
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=environment(),
            limit=1 << 24,
        )
        agent = cls(name, proc, url)
        assert "result" in await agent.call("initialize", INITIALIZE)
        return agent

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            message = json.loads(line)
            if "method" in message:
                self.updates.append(message)
            elif message.get("id") in self.answers:
                self.answers[message["id"]].set_result(message)
        for future in self.answers.values():  # the process ended: nothing more will be answered
            if not future.done():
                future.set_result({"exited": True})

    def send(self, method: str, params: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """Send a request; the future its answer resolves."""
        assert self.proc.stdin is not None
        self.next_id += 1
        rid = f"{self.name}-{self.next_id}"
        future = self.answers[rid] = asyncio.get_running_loop().create_future()
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        return future

    def notify(self, method: str, params: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode() + b"\n")

    async def call(self, method: str, params: dict[str, Any], bound: float = ANSWER_BOUND) -> dict[str, Any]:
        """Send a request and wait for its answer, at most `bound` seconds (the test fails otherwise)."""
        future = self.send(method, params)
        started = time.monotonic()
        try:
            return await asyncio.wait_for(asyncio.shield(future), bound)
        except TimeoutError:
            pytest.fail(f"{self.name} did not answer {method} within {bound} s")
        finally:
            self.waits.append(time.monotonic() - started)

    async def resume(self, session_id: str) -> None:
        answer = await self.call("session/resume", {"sessionId": session_id, "cwd": "/", "mcpServers": []})
        assert answer.get("result") == {}, answer

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()

    async def close(self) -> None:
        self.kill()
        await self.proc.wait()
        self.reader.cancel()


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def prompt(session_id: str, key: str, text: str, **hooks: bool) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    params["idempotencyKey"] = key
    if hooks:
        params["_meta"] = {HOOKS: hooks}
    return params


def user_messages(url: str, session_id: str) -> dict[str, list[str]]:
    """The session's user messages in the database: their messageIds by prompt text (one text per key here)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT message_id, content FROM ref_messages WHERE session_id = %s AND role = 'user' ORDER BY seq",
            (session_id,),
        ).fetchall()
    found: dict[str, list[str]] = {}
    for message_id, content in rows:
        found.setdefault(json.loads(content)[0]["text"], []).append(message_id)
    return found


async def new_session(agents: list[Agent]) -> str:
    """A session made on the first Agent and resumed on the others."""
    answer = await agents[0].call("session/new", {"cwd": "/", "mcpServers": []})
    session_id = str(answer["result"]["sessionId"])
    for agent in agents[1:]:
        await agent.resume(session_id)
    return session_id


def check_outcomes(
    url: str, session_id: str, outcomes: dict[str, list[dict[str, Any]]], agents: list[Agent] | None = None
) -> None:
    """The invariants, per key (`outcomes`: prompt text -> every answer its attempts got); with `agents`, a line
    of figures for the log (`pytest -s` shows it)."""
    stored = user_messages(url, session_id)
    for text, answers in outcomes.items():
        inserted = stored.get(text, [])
        assert len(inserted) <= 1, f"{text}: {len(inserted)} messages for one key"
        ids = {a["result"]["messageId"] for a in answers if "result" in a}
        if ids:
            assert ids == set(inserted), f"{text}: answered {ids}, inserted {inserted}"
        else:
            assert inserted == [], f"{text}: every attempt got an error, yet a message was inserted"
        for answer in answers:
            assert "result" in answer or answer.get("error", {}).get("code") in (INTERNAL, CANCELLED), answer
    if agents:
        attempts = [a for answers in outcomes.values() for a in answers]
        errors = sum("error" in a for a in attempts)
        longest = max((w for agent in agents for w in agent.waits), default=0.0)
        print(
            f"\n{len(outcomes)} keys, {len(attempts)} attempts, {errors} error answers, "
            f"{sum(len(v) for v in stored.values())} messages; longest wait for an answer {longest:.2f} s"
        )


# -- the conformance traces, every connection its own Agent process on one database -------------------------


def test_conformance_traces_pass_with_every_connection_a_separate_agent_on_one_database(url):
    command = [sys.executable, "-m", "acp_v2_runtime.conformance", "--timeout", "20", "--"]
    done = subprocess.run(
        [*command, *agent_command(url, "--lease", LEASE)],  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        env=environment(),
        timeout=600,
        check=False,
    )
    count = len(load_traces()["traces"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == f"{count} passed, 0 failed, 0 skipped, of {count} traces", done.stdout


# -- failover between three live Agents ------------------------------------------------------------------------


def test_the_same_key_on_three_agents_at_once_inserts_once(url):
    async def scenario() -> None:
        started = await asyncio.gather(*(Agent.start(name, url) for name in "ABC"))
        try:
            session_id = await new_session(list(started))
            outcomes: dict[str, list[dict[str, Any]]] = {}
            for number in range(12):
                key, text = f"k-{uuid.uuid4()}", f"race {number}"
                answers = await asyncio.gather(
                    *(a.call("session/prompt", prompt(session_id, key, text)) for a in started)
                )
                outcomes[text] = list(answers)
                assert all("result" in a for a in answers), answers
            check_outcomes(url, session_id, outcomes, started)
            assert len(user_messages(url, session_id)) == 12
        finally:
            for agent in started:
                await agent.close()

    run(scenario())


def test_holder_killed_before_insertion_another_agent_completes_the_key_once(url):
    async def scenario() -> None:
        a, b, c = await asyncio.gather(*(Agent.start(name, url) for name in "ABC"))
        try:
            session_id = await new_session([a, b, c])
            key = f"k-{uuid.uuid4()}"
            held = await _held(a, session_id, key, "held")  # A claims the key and holds before inserting
            waiting = b.send("session/prompt", prompt(session_id, key, "held"))
            await asyncio.sleep(1.0)
            assert not waiting.done()  # B waits on A's claim
            a.kill()
            answer = await asyncio.wait_for(waiting, ANSWER_BOUND)  # A's lease runs out; B takes the key over
            message_id = answer["result"]["messageId"]
            retry = await c.call("session/prompt", prompt(session_id, key, "held"))
            assert retry["result"]["messageId"] == message_id
            assert (await held).get("exited")  # A never answered: it was killed
            check_outcomes(url, session_id, {"held": [answer, retry]})
            assert user_messages(url, session_id) == {"held": [message_id]}
        finally:
            for agent in (a, b, c):
                await agent.close()

    run(scenario())


def test_holder_killed_mid_turn_the_retry_elsewhere_gets_the_same_message(url):
    async def scenario() -> None:
        a, b, c = await asyncio.gather(*(Agent.start(name, url) for name in "ABC"))
        try:
            session_id = await new_session([a, b, c])
            key = f"k-{uuid.uuid4()}"
            first = await a.call("session/prompt", prompt(session_id, key, "working", holdWork=True))
            message_id = first["result"]["messageId"]
            a.kill()  # in the middle of its turn
            answers = await asyncio.gather(
                *(agent.call("session/prompt", prompt(session_id, key, "working")) for agent in (b, c))
            )
            assert {x["result"]["messageId"] for x in answers} == {message_id}
            assert user_messages(url, session_id) == {"working": [message_id]}
        finally:
            for agent in (a, b, c):
                await agent.close()

    run(scenario())


# -- the server restarted and frozen under load ------------------------------------------------------------


async def _load(agents: list[Agent], session_id: str, keys: int, tries: int, outcomes: dict) -> None:
    """`keys` keyed prompts, each sent to one Agent and on an error (or no answer) to the next, same key, at most
    `tries` attempts; every answer is kept in `outcomes` by prompt text."""

    async def one(number: int) -> None:
        key, text = f"k-{uuid.uuid4()}", f"load {number}"
        outcomes[text] = []
        for attempt in range(tries):
            agent = agents[(number + attempt) % len(agents)]
            started = time.monotonic()
            answer = await agent.call("session/prompt", prompt(session_id, key, text))
            assert time.monotonic() - started < ANSWER_BOUND
            outcomes[text].append(answer)
            if "result" in answer:
                return
            await asyncio.sleep(0.5)

    await asyncio.gather(*(one(n) for n in range(keys)))


async def _recovered(agents: list[Agent], session_id: str, outcomes: dict) -> None:
    """Each Agent, without a restart, inserts a fresh prompt once the server is back. A connection the server
    dropped fails the one call that finds it so (-32603, nothing inserted): the Client tries again, same key."""
    for agent in agents:
        key, text = f"k-{uuid.uuid4()}", f"after {agent.name}"
        outcomes[text] = []
        for _ in range(RECOVERY_TRIES):
            answer = await agent.call("session/prompt", prompt(session_id, key, text))
            outcomes[text].append(answer)
            if "result" in answer:
                break
            await asyncio.sleep(0.2)
        assert "result" in outcomes[text][-1], f"{agent.name} did not recover: {outcomes[text]}"


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_server_restarted_under_load_every_outcome_is_true(url, cluster, mode):
    async def scenario() -> None:
        started = list(await asyncio.gather(*(Agent.start(name, url) for name in "ABC")))
        try:
            session_id = await new_session(started)
            outcomes: dict[str, list[dict[str, Any]]] = {}
            load = asyncio.get_running_loop().create_task(_load(started, session_id, 30, 6, outcomes))
            await asyncio.sleep(0.3)
            await asyncio.to_thread(cluster.restart, mode)
            await asyncio.wait_for(load, ANSWER_BOUND * 3)
            for agent in started:  # a read finds its connection dropped, and goes again on a new one
                for _ in range(3):
                    listed = await agent.call("session/list", {})
                    assert "result" in listed, f"{agent.name}: {listed}"
            await _recovered(started, session_id, outcomes)
            check_outcomes(url, session_id, outcomes, started)
        finally:
            for agent in started:
                await agent.close()

    run(scenario())


FREEZE_SECONDS = 8.0


def test_server_frozen_requests_that_need_no_store_are_answered_and_every_outcome_is_true_after_thaw(url, cluster):
    async def scenario() -> None:
        started = list(await asyncio.gather(*(Agent.start(name, url) for name in "ABC")))
        try:
            session_id = await new_session(started)
            outcomes: dict[str, list[dict[str, Any]]] = {}
            cluster.freeze()
            frozen_at = time.monotonic()
            try:
                load = asyncio.get_running_loop().create_task(_load(started, session_id, 12, 6, outcomes))
                for agent in started:  # no store needed: answered while the server is frozen
                    assert "result" in await agent.call("initialize", INITIALIZE, bound=STORE_WAIT_SECONDS)
                # The Agent's own store work gets -32603 in bounded time rather than silence.
                listed = await started[0].call("session/list", {}, bound=STORE_WAIT_SECONDS * 4)
                assert listed.get("error", {}).get("code") == INTERNAL, listed
                await asyncio.sleep(max(0.0, FREEZE_SECONDS - (time.monotonic() - frozen_at)))
            finally:
                cluster.thaw()
            await asyncio.wait_for(load, ANSWER_BOUND * 3)
            await _recovered(started, session_id, outcomes)
            check_outcomes(url, session_id, outcomes, started)
            # Every attempt, keyed prompts held up by the frozen server among them, was answered within the bound.
            assert max(w for agent in started for w in agent.waits) < STALL_BOUND
        finally:
            for agent in started:
                await agent.close()

    run(scenario())


# -- the Agent's side of a stalled store: bounded answers, the key left unused --------------------------------

STALL_BOUND = STORE_WAIT_SECONDS * 3  # an answer while the server is frozen: the store's bound, and slack for CI
RELEASE = "_conformance/release"


async def _held(agent: Agent, session_id: str, key: str, text: str) -> asyncio.Future[dict[str, Any]]:
    """A keyed prompt that `agent` claims and then holds before inserting (the holdInsert hook)."""
    future = agent.send("session/prompt", prompt(session_id, key, text, holdInsert=True))
    await _claimed(agent.url, session_id)
    assert not future.done(), future.result()
    return future


async def _claimed(url: str, session_id: str) -> None:
    """Wait until a claim of the session's key is in the store (however slow the machine is)."""
    import psycopg

    deadline = time.monotonic() + ANSWER_BOUND
    while True:
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM acp_idempotency_keys WHERE session_id = %s AND state = 'pending'", (session_id,)
            ).fetchone()
        if row and row[0]:
            return
        assert time.monotonic() < deadline, "the claim never reached the store"
        await asyncio.sleep(0.05)


def test_frozen_server_a_cancel_of_a_held_prompt_is_answered_at_once(url, cluster):
    async def scenario() -> None:
        a, b = await asyncio.gather(*(Agent.start(name, url) for name in "AB"))
        try:
            session_id = await new_session([a, b])
            key = f"k-{uuid.uuid4()}"
            held = await _held(a, session_id, key, "cancelled")
            rid = next(r for r, f in a.answers.items() if f is held)
            cluster.freeze()
            try:
                started = time.monotonic()
                a.notify("$/cancel_request", {"requestId": rid})
                answer = await asyncio.wait_for(held, STALL_BOUND)
                assert answer.get("error", {}).get("code") == CANCELLED, answer
                assert time.monotonic() - started < STALL_BOUND
            finally:
                cluster.thaw()
            await asyncio.sleep(float(LEASE) + 1)  # whatever claim is left runs out
            assert user_messages(url, session_id) == {}
            # The key is unused: a retry inserts it, once.
            again = await b.call("session/prompt", prompt(session_id, key, "cancelled"))
            assert user_messages(url, session_id) == {"cancelled": [again["result"]["messageId"]]}
        finally:
            for agent in (a, b):
                await agent.close()

    run(scenario())


def test_frozen_server_a_released_held_prompt_gets_an_error_in_bounded_time_and_the_key_stays_unused(url, cluster):
    async def scenario() -> None:
        a, b = await asyncio.gather(*(Agent.start(name, url) for name in "AB"))
        try:
            session_id = await new_session([a, b])
            key = f"k-{uuid.uuid4()}"
            held = await _held(a, session_id, key, "stalled")
            cluster.freeze()
            try:
                started = time.monotonic()
                a.notify(RELEASE, {"sessionId": session_id})  # A goes on to insert, into a frozen server
                answer = await asyncio.wait_for(held, STALL_BOUND)
                assert answer.get("error", {}).get("code") == INTERNAL, answer
                assert time.monotonic() - started < STALL_BOUND
            finally:
                cluster.thaw()
            await asyncio.sleep(float(LEASE) + 1)
            assert user_messages(url, session_id) == {}, "an error was answered, then the message was inserted"
            again = await b.call("session/prompt", prompt(session_id, key, "stalled"))
            assert user_messages(url, session_id) == {"stalled": [again["result"]["messageId"]]}
        finally:
            for agent in (a, b):
                await agent.close()

    run(scenario())


def test_frozen_server_a_prompt_pending_on_another_agents_claim_gets_an_error_in_bounded_time(url, cluster):
    async def scenario() -> None:
        a, b = await asyncio.gather(*(Agent.start(name, url) for name in "AB"))
        try:
            session_id = await new_session([a, b])
            key = f"k-{uuid.uuid4()}"
            await _held(a, session_id, key, "pending")
            waiting = b.send("session/prompt", prompt(session_id, key, "pending"))
            await asyncio.sleep(1.0)
            assert not waiting.done()  # B waits on A's claim
            cluster.freeze()
            try:
                answer = await asyncio.wait_for(waiting, STALL_BOUND)
                assert answer.get("error", {}).get("code") == INTERNAL, answer
            finally:
                cluster.thaw()
            a.kill()  # A never inserts: the held prompt is never released
            await asyncio.sleep(float(LEASE) + 1)
            assert user_messages(url, session_id) == {}
        finally:
            for agent in (a, b):
                await agent.close()

    run(scenario())


def test_a_cancel_on_another_agent_withdraws_the_held_prompt_on_every_agent(url):
    async def scenario() -> None:
        a, b = await asyncio.gather(*(Agent.start(name, url) for name in "AB"))
        try:
            session_id = await new_session([a, b])
            key = f"k-{uuid.uuid4()}"
            held = await _held(a, session_id, key, "withdrawn")
            waiting = b.send("session/prompt", prompt(session_id, key, "withdrawn"))
            await asyncio.sleep(1.0)
            assert not waiting.done()  # B waits on A's claim
            rid = next(r for r, f in b.answers.items() if f is waiting)
            b.notify("$/cancel_request", {"requestId": rid})  # the Client gave up on B, before any insertion
            answer = await asyncio.wait_for(waiting, ANSWER_BOUND)
            assert answer.get("error", {}).get("code") == CANCELLED, answer
            a.notify(RELEASE, {"sessionId": session_id})  # A goes on: it must find the withdrawal, not insert
            first = await asyncio.wait_for(held, ANSWER_BOUND)
            assert first.get("error", {}).get("code") == CANCELLED, first
            await asyncio.sleep(0.5)
            assert user_messages(url, session_id) == {}, "the Client was told -32800, then the message was inserted"
        finally:
            for agent in (a, b):
                await agent.close()

    run(scenario())


def test_frozen_server_cancels_that_need_no_store_are_answered_at_once(url, cluster):
    async def scenario() -> None:
        (a,) = await asyncio.gather(Agent.start("A", url))
        try:
            session_id = await new_session([a])
            unkeyed = {"sessionId": session_id, "prompt": [{"type": "text", "text": "unkeyed"}]}
            held = a.send("session/prompt", {**unkeyed, "_meta": {HOOKS: {"holdInsert": True}}})
            working = await a.call("session/prompt", prompt(session_id, f"k-{uuid.uuid4()}", "turn", holdWork=True))
            assert "result" in working, working
            await asyncio.sleep(0.5)
            rid = next(r for r, f in a.answers.items() if f is held)
            cluster.freeze()
            try:
                started = time.monotonic()
                a.notify("$/cancel_request", {"requestId": rid})  # an unkeyed prompt not inserted yet
                answer = await asyncio.wait_for(held, STALL_BOUND)
                assert answer.get("error", {}).get("code") == CANCELLED, answer
                a.notify("session/cancel", {"sessionId": session_id})  # the running turn
                while not any(
                    u["params"]["update"].get("stopReason") == "cancelled" for u in a.updates if "params" in u
                ):
                    assert time.monotonic() - started < STALL_BOUND, "the turn was not cancelled in time"
                    await asyncio.sleep(0.05)
            finally:
                cluster.thaw()
            assert user_messages(url, session_id) == {"turn": [working["result"]["messageId"]]}
        finally:
            await a.close()

    run(scenario())


def test_frozen_server_closing_the_input_ends_the_agent_in_bounded_time(url, cluster):
    async def scenario() -> None:
        (a,) = await asyncio.gather(Agent.start("A", url))
        try:
            session_id = await new_session([a])
            held = a.send("session/prompt", prompt(session_id, f"k-{uuid.uuid4()}", "held", holdInsert=True))
            await asyncio.sleep(0.5)
            cluster.freeze()
            try:
                listing = a.send("session/list", {})  # its worker thread waits on the frozen server
                await asyncio.sleep(0.2)
                assert a.proc.stdin is not None
                a.proc.stdin.close()
                await asyncio.wait_for(a.proc.wait(), FINISH_SECONDS + STALL_BOUND)
            finally:
                cluster.thaw()
            # Whatever was answered is true: the held prompt was withdrawn, the listing cut off or refused.
            assert (await held).get("error", {}).get("code") in (CANCELLED, None), held.result()
            assert "result" not in await listing
            assert user_messages(url, session_id) == {}
        finally:
            await a.close()

    run(scenario())


def test_frozen_server_a_new_session_gets_an_error_in_bounded_time_and_is_never_written(url, cluster):
    async def scenario() -> None:
        (a,) = await asyncio.gather(Agent.start("A", url))
        try:
            before = await a.call("session/list", {})
            cluster.freeze()
            try:
                answer = await a.call("session/new", {"cwd": "/frozen", "mcpServers": []}, bound=STALL_BOUND)
                assert answer.get("error", {}).get("code") == INTERNAL, answer
            finally:
                cluster.thaw()
            await asyncio.sleep(1.0)  # the transaction the Agent stopped waiting for reaches its COMMIT, and fails
            after = await a.call("session/list", {})
            assert after["result"]["sessions"] == before["result"]["sessions"], "-32603, then the session was written"
        finally:
            await a.close()

    run(scenario())
