"""Remote-side planted bugs, each caught behind a real balancer (issue 49, item 3), and the reference cluster
passing the same checks; the stdio bridge never turning a transport failure into an answer.

Each check is one of the history check's invariants, on a short scenario that the bug's failure needs:

- at-most-one: a keyed prompt answered, its node killed, the retry redispatched to another node and resumed there:
  the original messageId, one user message in the replay (catches memory-keys; and, with the key-dropping proxy
  in front, a prompt whose POST was answered 502, resent over a new connection: catches key-dropping-proxy);
- success-names-stored: a node killed right after its answer: the replay from another node holds the message
  (catches early-answer);
- success-names-its-own: two connections prompting at once, with the same JSON-RPC ids: each messageId answered
  is, in the replay, the message with that connection's text (catches crossed-answers).

Needs HAProxy and PostgreSQL (skipped, naming the setup script, when absent; failing under CI=true, as
tests/cluster does). The planted bugs are in planted_remote.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest
from acp_v2_schema import protocol as M

from acp_v2_runtime.client import ErrorResponse, NoResponse, NotSent
from acp_v2_runtime.cluster import Cluster, reference_command
from acp_v2_runtime.conformance.network import Fault, running_proxy
from acp_v2_runtime.remote import HttpConnection

HERE = Path(__file__).resolve().parent
PLANTED = HERE / "planted_remote.py"
COOKIE = "ACPNODE"  # the balancer's affinity cookie (acp_v2_runtime.cluster.Settings.cookie)
PATIENCE = 20.0  # seconds an answer may take on a loaded machine
CWD = "/"


def _missing(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def haproxy() -> None:
    if (shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")) is None:
        _missing("haproxy is not installed; run .ci/setup.d/31-haproxy.sh")


def planted_command(bug: str | None, db: str) -> list[str]:
    """A node command: the reference Agent served on {host}:{port}, with `bug` planted (None: the reference)."""
    if bug is None:
        return reference_command(db)
    return [sys.executable, str(PLANTED), "--bug", bug, "--", "--listen", "{host}:{port}", "--db", db]


@pytest.fixture
def cluster_of(haproxy: None, pg_dsn: str, tmp_path: Path) -> Iterator[Any]:
    """Start a cluster of two nodes with a bug planted (or none); stopped when the test ends."""
    started: list[Cluster] = []

    def start(bug: str | None, nodes: int = 2) -> Cluster:
        cluster = Cluster(pg_dsn, nodes=nodes, command=planted_command(bug, pg_dsn), workdir=tmp_path / "cluster")
        started.append(cluster.start())
        return cluster

    yield start
    for cluster in started:
        cluster.stop()


# -- a Client's few moves, on our HttpConnection ------------------------------------------------------------------


class Peer:
    """One ACP connection (cookies shared through `jar`), recording the user messages it is told about."""

    def __init__(self, url: str, jar: CookieJar | None = None) -> None:
        self.jar = jar if jar is not None else CookieJar()
        self.users: list[tuple[str, str]] = []  # (messageId, text) of each user_message update seen
        self.connection = HttpConnection(url, cookies=self.jar, on_notification=self._note, timeout=PATIENCE)
        self.ids = iter(range(1, 10**6))

    def _note(self, method: str, params: Any) -> None:
        update = params.get("update", {}) if isinstance(params, dict) else {}
        if method == M.SESSION_UPDATE and update.get("sessionUpdate") == "user_message":
            self.users.append((update["messageId"], update["content"][0]["text"]))

    async def open(self) -> Peer:
        params = {"protocolVersion": 2, "info": {"name": "history-remote-test", "version": "0"}, "capabilities": {}}
        await self.connection.request(M.INITIALIZE, params, next(self.ids))
        return self

    async def new_session(self) -> str:
        result = await self.connection.request(M.SESSION_NEW, {"cwd": CWD}, next(self.ids))
        return str(result["sessionId"])

    async def prompt(self, session: str, text: str, key: str | None, rid: int | None = None) -> str:
        params: dict[str, Any] = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        if key is not None:
            params["idempotencyKey"] = key
        result = await self.connection.request(M.SESSION_PROMPT, params, rid if rid is not None else next(self.ids))
        return str(result["messageId"])

    async def replay(self, session: str) -> list[tuple[str, str]]:
        """The session's user messages as the store holds them (resumed, replayed from the start)."""
        self.users.clear()
        params = {"sessionId": session, "cwd": CWD, "replayFrom": {"type": "start"}}
        await self.connection.request(M.SESSION_RESUME, params, next(self.ids))
        await asyncio.sleep(0.3)  # replayed updates may trail the answer on the session stream
        return list(self.users)

    def node(self) -> str:
        """The node the balancer's cookie names."""
        return next(c.value for c in self.jar if c.name == COOKIE and c.value)

    async def close(self) -> None:
        await self.connection.close()


async def fresh(url: str, session: str | None = None) -> Peer:
    """A new connection through `url` (no cookie: the balancer picks a live node); the session resumed on it."""
    peer = await Peer(url).open()
    if session is not None:
        await peer.connection.request(M.SESSION_RESUME, {"sessionId": session, "cwd": CWD}, next(peer.ids))
    return peer


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# -- the scenarios, each returning what its invariant says (empty when it holds) ---------------------------------


async def retry_after_node_kill(cluster: Cluster) -> list[str]:
    """at-most-one: answered, the node killed, the retry redispatched to another node gets the original."""
    first = await fresh(cluster.url)
    session = await first.new_session()
    key, text = str(uuid.uuid4()), f"hello {uuid.uuid4().hex[:6]}"
    original = await first.prompt(session, text, key)
    home = first.node()
    first.connection.abort("the node is about to die")
    cluster.kill(home)
    cluster.wait_down(home)
    second = await fresh(cluster.url, session)
    problems = []
    try:
        if second.node() == home:
            problems.append(f"the balancer sent the retry to the dead node {home}")
        again = await second.prompt(session, text, key)
        stored = await second.replay(session)
        if again != original:
            problems.append(f"at-most-one: the retry on another node was answered {again}, not {original}")
        mine = [mid for mid, said in stored if said == text]
        if len(mine) != 1:
            problems.append(f"at-most-one: the store holds {len(mine)} user messages of one key: {mine}")
    finally:
        await second.close()
        cluster.restart(home)
    return problems


async def killed_after_answer(cluster: Cluster) -> list[str]:
    """success-names-stored: a node killed right after it answered; the message is in the replay elsewhere."""
    first = await fresh(cluster.url)
    session = await first.new_session()
    text = f"keep me {uuid.uuid4().hex[:6]}"
    answered = await first.prompt(session, text, str(uuid.uuid4()))
    home = first.node()
    cluster.kill(home)  # at once: whatever the node had not committed is gone
    first.connection.abort("its node died")
    cluster.wait_down(home)
    second = await fresh(cluster.url, session)
    try:
        stored = await second.replay(session)
    finally:
        await second.close()
        cluster.restart(home)
    if answered not in [mid for mid, _ in stored]:
        return [f"success-names-stored: the Client was told {answered}, and the store holds {stored or 'nothing'}"]
    return []


async def crossed_prompts(url: str) -> list[str]:
    """success-names-its-own: two connections prompt at once under the same ids; each is told its own message."""
    owner = await fresh(url)
    session_a = await owner.new_session()
    session_b = await owner.new_session()
    a, b = await fresh(url, session_a), await fresh(url, session_b)
    texts = {"a": f"from a {uuid.uuid4().hex[:6]}", "b": f"from b {uuid.uuid4().hex[:6]}"}
    told: dict[str, str] = {}
    problems = []

    async def one(name: str, peer: Peer, session: str) -> None:
        try:
            told[name] = await peer.prompt(session, texts[name], str(uuid.uuid4()), rid=100)
        except (NoResponse, NotSent, ErrorResponse) as exc:
            problems.append(f"answered-within-bound: connection {name} was told no messageId ({exc})")

    try:
        await asyncio.gather(one("a", a, session_a), one("b", b, session_b))
        for name, session in (("a", session_a), ("b", session_b)):
            stored = dict(await owner.replay(session))
            if name in told and stored.get(told[name]) != texts[name]:
                problems.append(
                    f"success-names-its-own: connection {name} was told {told[name]}, which in its session holds"
                    f" {stored.get(told[name])!r}, not its text {texts[name]!r}"
                )
    finally:
        for peer in (owner, a, b):
            await peer.close()
    return problems


async def resend_through(proxy_url: str, arm: Any) -> list[str]:
    """at-most-one through a proxy: a POST answered 502 (the Agent inserted), resent with its key on a new
    connection: one message, the original messageId; the 502 was never taken for 'not inserted'."""
    first = await fresh(proxy_url)
    session = await first.new_session()
    key, text = str(uuid.uuid4()), f"once {uuid.uuid4().hex[:6]}"
    armed = arm()
    problems = []
    try:
        await first.prompt(session, text, key)
        problems.append("the armed post-502 did not fail the prompt")
    except ErrorResponse as exc:
        problems.append(f"not-inserted-by-transport: a 502 was reported as the Agent's error {exc.code}")
    except NoResponse:
        pass  # outcome unknown: resend with the key
    first.connection.abort("resending on a new connection")
    second = await fresh(proxy_url, session)
    try:
        again = await second.prompt(session, text, key)
        stored = await second.replay(session)
    finally:
        await second.close()
    armed.wait(PATIENCE)
    mine = [mid for mid, said in stored if said == text]
    if len(mine) != 1:
        problems.append(f"at-most-one: one key, {len(mine)} user messages stored: {mine}")
    if armed.message_id is not None and again != armed.message_id:
        problems.append(f"at-most-one: the resend was answered {again}, the first attempt {armed.message_id}")
    return problems


async def _after_the_kill(
    remote: Any, armed: Any, session: str, resend: tuple[str, str] | None = None
) -> tuple[str | None, list[tuple[str, str]]]:
    """Once the proxy has killed the node and it is up again: a new connection resumes `session`, resends the prompt
    (`resend`: its text and key) if asked, and replays the session; the resend's messageId and the replay."""
    armed.wait(PATIENCE)
    await remote.settle()
    second = await fresh(remote.proxy.url, session)
    try:
        again = await second.prompt(session, *resend) if resend is not None else None
        return again, await second.replay(session)
    finally:
        await second.close()


async def kill_after_answer(remote: Any) -> list[str]:
    """success-names-stored: the proxy kills the node the moment its answer passes; another node's replay holds the
    message the Client was told."""
    armed = remote.arm(Fault.KILL_AFTER_ANSWER.value)
    first = await fresh(remote.proxy.url)
    session = await first.new_session()
    text = f"kept {uuid.uuid4().hex[:6]}"
    try:
        answered = await first.prompt(session, text, str(uuid.uuid4()))
    finally:
        first.connection.abort("its node died")
    _, stored = await _after_the_kill(remote, armed, session)
    problems = [] if armed.killed else [f"the proxy killed no node ({armed.told})"]
    if answered not in [mid for mid, _ in stored]:
        problems.append(f"success-names-stored: the Client was told {answered}, the store holds {stored or 'nothing'}")
    return problems


async def kill_after_forward(remote: Any) -> list[str]:
    """at-most-one: the node is killed the moment it accepted the prompt (holding or inserting its key); the Client
    hears no answer, never an error; its resend on a new connection, through another node, leaves one message."""
    armed = remote.arm(Fault.KILL_AFTER_FORWARD.value)
    first = await fresh(remote.proxy.url)
    session = await first.new_session()
    key, text = str(uuid.uuid4()), f"once {uuid.uuid4().hex[:6]}"
    problems = []
    try:
        told = await first.prompt(session, text, key)
        problems.append(f"the Client was told {told} although its node was killed before answering")
    except ErrorResponse as exc:
        problems.append(f"transport-not-refusal: the killed node's prompt was reported as the error {exc.code}")
    except NoResponse:
        pass  # outcome unknown: resend with the key
    finally:
        first.connection.abort("its node died")
    again, stored = await _after_the_kill(remote, armed, session, (text, key))
    if not armed.killed:
        problems.append(f"the proxy killed no node ({armed.told})")
    mine = [mid for mid, said in stored if said == text]
    if mine != [again]:
        problems.append(f"at-most-one: the resend was answered {again}; the store holds {mine} for its key")
    return problems


@pytest.fixture
def target_of(haproxy: None, pg_dsn: str) -> Iterator[Any]:
    """The kit's own remote target (two nodes with `bug` planted, behind its balancer and its fault proxy, which can
    kill a node), as `conformance history --nodes` makes it; stopped when the test ends."""
    from acp_v2_runtime.conformance.history.remote import remote_target

    with contextlib.ExitStack() as stack:

        def start(bug: str | None) -> Any:
            return stack.enter_context(remote_target(None, "http", nodes=2, command=_node(bug), postgres=pg_dsn))

        yield start


# -- the reference passes, each bug is caught ---------------------------------------------------------------------


def test_the_proxy_kills_a_reference_node_after_forward_and_after_answer(target_of: Any) -> None:
    remote = target_of(None)
    assert run(kill_after_forward(remote)) == []
    assert run(kill_after_answer(remote)) == []
    made = {record.fault for record in remote.proxy.proxy.plan.records()}
    assert made == {Fault.KILL_AFTER_FORWARD, Fault.KILL_AFTER_ANSWER}


def test_early_answer_caught_when_the_proxy_kills_its_node_after_the_answer(target_of: Any) -> None:
    problems = run(kill_after_answer(target_of("early-answer")))
    assert any(p.startswith("success-names-stored") for p in problems), problems


def test_reference_cluster_keeps_every_invariant(cluster_of: Any) -> None:
    cluster = cluster_of(None)
    assert run(retry_after_node_kill(cluster)) == []
    assert run(killed_after_answer(cluster)) == []
    assert run(crossed_prompts(cluster.node_url(0))) == []
    with running_proxy(cluster.url) as proxy:
        assert run(resend_through(proxy.url, lambda: proxy.arm(Fault.POST_502, "http"))) == []


def test_memory_keys_caught_by_a_retry_on_another_node(cluster_of: Any) -> None:
    problems = run(retry_after_node_kill(cluster_of("memory-keys")))
    assert any(p.startswith("at-most-one") for p in problems), problems


def test_early_answer_caught_by_a_kill_after_the_answer(cluster_of: Any) -> None:
    problems = run(killed_after_answer(cluster_of("early-answer")))
    assert any(p.startswith("success-names-stored") for p in problems), problems


def test_crossed_answers_caught_by_two_connections_at_once(cluster_of: Any) -> None:
    cluster = cluster_of("crossed-answers", nodes=1)
    problems = run(crossed_prompts(cluster.node_url(0)))
    assert any(p.startswith(("success-names-its-own", "answered-within-bound")) for p in problems), problems


def test_key_dropping_proxy_caught_by_a_resend(cluster_of: Any) -> None:
    cluster = cluster_of(None)
    with _planted_proxy(cluster.url) as url:
        arm = _arm_over_http(url)
        problems = run(resend_through(url, arm))
    assert any(p.startswith("at-most-one") for p in problems), problems


# -- the planted proxy, a process of its own (its rewriting must not reach this process's proxies) ---------------


class _Process:
    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.url = line.split(" on ", 1)[1].split(" ", 1)[0] if " on " in line else ""

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


class _planted_proxy:  # a context manager, like running_proxy
    def __init__(self, upstream: str) -> None:
        self.argv = [sys.executable, str(PLANTED), "--bug", "key-dropping-proxy", "--"]
        self.argv += ["--listen", "127.0.0.1:0", "--upstream", upstream]

    def __enter__(self) -> str:
        self.running = _Process(self.argv)
        if not self.running.url:
            self.running.stop()
            raise RuntimeError("the key-dropping proxy did not start")
        return self.running.url

    def __exit__(self, *exc: object) -> None:
        self.running.stop()


class _RemoteArmed:
    """An armed fault of a proxy in another process, read back through its control knob's log."""

    def __init__(self, control: str) -> None:
        self.control = control
        self.message_id: str | None = None

    def wait(self, timeout: float) -> None:
        import httpx

        for _ in range(int(timeout * 10)):
            records = httpx.get(self.control + "/log", timeout=timeout).json()
            if records and records[-1]["done"]:
                self.message_id = records[-1]["messageId"]
                return
            time.sleep(0.1)


def _arm_over_http(url: str) -> Any:
    import httpx

    from acp_v2_runtime.conformance.network import CONTROL

    control = url.rstrip("/") + CONTROL

    def arm() -> _RemoteArmed:
        response = httpx.post(control + "/arm", json={"fault": Fault.POST_502.value, "profile": "http"}, timeout=10)
        response.raise_for_status()
        return _RemoteArmed(control)

    return arm


@pytest.mark.fuzz
def test_history_check_over_the_bridge_catches_memory_keys(cluster_of: Any) -> None:
    """The kit's own history check, each Agent instance a bridge to the balancer, finds memory-keys by its seeded
    schedules (retries mostly go to another instance, so another node) and shrinks it to a replayable line."""
    cluster = cluster_of("memory-keys", nodes=3)
    schedules = max(4, int(os.environ.get("ACP_FUZZ_DRAWS", "0")) // 250)
    argv = [sys.executable, "-m", "acp_v2_runtime.conformance", "history", "--seed", "101"]
    argv += ["--schedules", str(schedules), "--shrink-runs", "8", "--"]
    argv += [sys.executable, "-m", "acp_v2_runtime.remote.bridge", "--url", cluster.url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    print(done.stdout[-3000:])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "at-most-one" in done.stdout and "replay: " in done.stdout


# -- the history check over URLs: network faults in its schedules (issue 49, item 2) ------------------------------


def _history_over(cluster_args: list[str], node: list[str], *more: str, timeout: float = 300) -> Any:
    argv = [sys.executable, "-m", "acp_v2_runtime.conformance", "history", *cluster_args, *more]
    argv += ["--", *node] if node else []
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=HERE.parent)


def _node(bug: str | None) -> list[str]:
    if bug is None:
        return [sys.executable, "-m", "acp_v2_runtime.reference_agent", "--listen", "{host}:{port}", "--db", "{db}"]
    return [sys.executable, str(PLANTED), "--bug", bug, "--", "--listen", "{host}:{port}", "--db", "{db}"]


CAUGHT_BY = {
    "early-answer": ("success-names-stored",),
    "crossed-answers": ("answered-within-bound", "success-names-stored"),
    "key-dropping-proxy": ("at-most-one",),
    "memory-keys": ("at-most-one",),
}
"""The invariants the history check finds each remote bug by (a crossed answer never reaches the connection that
asked: its bridge drops an answer to an id it did not send)."""


def _catch(bug: str, cluster_of: Any, pg_dsn: str, budget: list[str]) -> None:
    """The kit's own schedules against `bug`, through a real balancer on PostgreSQL: three nodes with the bug, or the
    reference nodes behind the key-dropping proxy (judged by --url); the failure, its invariant and its replay."""
    began = time.monotonic()
    if bug == "key-dropping-proxy":
        with _planted_proxy(cluster_of(None).url) as url:
            done = _history_over(["--url", url], [], *budget, timeout=1800)
    else:
        done = _history_over(["--nodes", "3", "--postgres", pg_dsn], _node(bug), *budget, timeout=1800)
    print(f"{bug}: {time.monotonic() - began:.1f}s\n{done.stdout[-3000:]}")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert any(f"  {invariant}: " in done.stdout for invariant in CAUGHT_BY[bug]), done.stdout[-3000:]
    assert "\nreplay: python -m acp_v2_runtime.conformance history --seed " in done.stdout


@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_history_check_catches_a_planted_remote_bug_by_its_random_schedules(
    bug: str, cluster_of: Any, pg_dsn: str
) -> None:
    """Seed 1000, the first three schedules of the default budget, short shrinking."""
    _catch(bug, cluster_of, pg_dsn, ["--seed", "1000", "--schedules", "3", "--bound", "6", "--shrink-runs", "2"])


@pytest.mark.fuzz
@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_each_planted_remote_bug_is_caught_from_a_random_seed_within_the_default_budget(
    bug: str, cluster_of: Any, pg_dsn: str
) -> None:
    """make fuzz: a random seed (printed), the default budget (20 schedules of 16 steps), the default shrinking."""
    if not os.environ.get("ACP_FUZZ_DRAWS"):
        pytest.skip("make fuzz runs it (the default budget from a random seed); make test runs seed 1000")
    _catch(bug, cluster_of, pg_dsn, ["--seed", str(random.randrange(1, 10**6))])


def test_a_network_fault_is_drawn_before_a_keyed_prompt_and_only_over_urls() -> None:
    from acp_v2_runtime.conformance.history.remote import faults_for
    from acp_v2_runtime.conformance.history.schedule import Shape, generate

    stdio = [s for seed in range(30) for s in generate(seed, 16, Shape())]
    assert not [s for s in stdio if s.op == "net"] and not [s for s in stdio if s.node]
    for profile in ("http", "websocket"):
        shape = Shape(net=faults_for(profile, kills=True), kill="node")
        for seed in range(30):
            steps = generate(seed, 16, shape)
            for step, after in itertools.pairwise(steps):
                if step.op == "net":
                    assert step.form in faults_for(profile, kills=True)
                    assert after.op in ("prompt", "retry", "twin", "again", "cross"), (seed, after)
            assert all(s.node for s in steps if s.op == "kill")
            assert steps[-1].op != "net"  # a fault armed last would fall on no prompt
    assert not [s for s in generate(7, 200, Shape(net=faults_for("http"), kill="")) if s.op == "kill"]
    assert not {"node-kill-after-forward", "node-kill-after-answer"} & set(faults_for("http") + faults_for("websocket"))


def test_a_transport_failure_is_unknown_never_not_inserted() -> None:
    """The judgement: an attempt a network fault fell on is excused from the answer bound when it got no answer,
    and is a violation when it was told an error (the Client would take it for 'not inserted')."""
    from acp_v2_runtime.conformance.history import History, check
    from acp_v2_runtime.conformance.history.run import Attempt

    def history(code: int | None, answered: bool) -> History:
        h = History(1, [], 0.0)
        attempt = Attempt(0, 0, "k" * 20, "text", 0, False, 0, 0, False, 0.1, rid=1, fault="post-502")
        attempt.answered, attempt.code = (0.5 if answered else None), code
        h.attempts.append(attempt)
        h.stored = {0: []}
        return h

    assert check(history(None, answered=False), bound=5, lease=30) == []
    found = check(history(-32603, answered=True), bound=5, lease=30)
    assert [v.invariant for v in found] == ["transport-not-refusal"], found


def test_reference_cluster_passes_network_fault_schedules(haproxy: None, pg_dsn: str) -> None:
    done = _history_over(
        ["--nodes", "3", "--postgres", pg_dsn], _node(None), "--seed", "200", "--schedules", "2", "--steps", "12"
    )
    print(done.stdout[-2000:])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "faults: " in done.stdout and "2 passed, 0 failed" in done.stdout


def test_a_shrunk_network_fault_failure_replays_by_its_printed_line(haproxy: None, pg_dsn: str) -> None:
    """Four steps of seed 102's schedule over two nodes: a keyed prompt on agent 2, the node serving it killed
    behind the balancer, a network fault (node-kill-after-answer) armed, and a retry on agent 0, which asks for the
    same node (each instance asks for node i modulo the cluster's size). A node keeping keys in memory forgot the
    key with its death: the retry stores the prompt a second time. The shrunk trace keeps the network fault, and
    the command it prints replays the failure."""
    cluster = ["--nodes", "2", "--postgres", pg_dsn]
    bug, seed = _node("memory-keys"), ["--seed", "102", "--schedules", "1", "--bound", "8", "--keep", "4,10,12,13"]
    done = _history_over(cluster, bug, *seed, "--shrink-runs", "1")
    print(done.stdout[-3000:])
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    trace = done.stdout.split("still failing", 1)[-1]
    assert "at-most-one" in trace and "network fault node-kill-after-answer armed" in trace, done.stdout[-3000:]
    line = next(row for row in done.stdout.splitlines() if row.startswith("replay: "))
    words = shlex.split(line.removeprefix("replay: "))
    assert words[:5] == ["python", "-m", "acp_v2_runtime.conformance", "history", "--seed"] and "--nodes" in words
    replay = [sys.executable, *words[1:]]
    replay[replay.index("--") : replay.index("--")] = ["--shrink-runs", "0"]
    again = subprocess.run(replay, capture_output=True, text=True, timeout=300, cwd=HERE.parent)
    assert again.returncode == 1 and "at-most-one" in again.stdout, again.stdout[-3000:] + again.stderr[-2000:]


@pytest.mark.fuzz
def test_reference_cluster_passes_a_large_network_fault_budget(haproxy: None, pg_dsn: str) -> None:
    if not os.environ.get("ACP_FUZZ_DRAWS"):
        pytest.skip("make fuzz runs it (minutes); make test runs two schedules")
    schedules = max(10, int(os.environ.get("ACP_FUZZ_DRAWS", "0")) // 100)
    for profile in ("http", "websocket"):
        cluster = ["--nodes", "3", "--postgres", pg_dsn, "--profile", profile]
        done = _history_over(cluster, _node(None), "--seed", "500", "--schedules", str(schedules), timeout=1800)
        print(done.stdout[-2000:])
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
