"""The fault proxy's plan and control knob, without node or an Agent (the fault matrix of tests/interop/remote makes
every fault between real Clients and Agents): faults are taken in the order armed, only by a prompt of a profile
that can carry them; the knob arms, lists and resets, and refuses what cannot be armed with the reason; a request
to an upstream that cannot be reached is answered 502, not hung."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("uvicorn", reason="the fault proxy needs the remote extra: pip install -e 'runtime[remote]'")
httpx = pytest.importorskip("httpx", reason="the fault proxy needs the remote extra")

from acp_v2_runtime.conformance.network import (  # noqa: E402
    APPLIES_TO,
    CONTROL,
    HTTP,
    MEANING,
    WEBSOCKET,
    Fault,
    FaultPlan,
    running_proxy,
)
from acp_v2_runtime.conformance.network.faults import KILLS  # noqa: E402


def test_every_fault_says_what_it_does_and_where() -> None:
    assert set(MEANING) == set(Fault) == set(APPLIES_TO)
    assert all(APPLIES_TO[fault] for fault in Fault)


def test_faults_are_taken_in_order_by_a_prompt_that_can_carry_them() -> None:
    plan = FaultPlan()
    ws_only = plan.arm(Fault.WS_CLOSE_AFTER_PROMPT)
    either = plan.arm("swallow-answer")
    assert plan.take(HTTP) is either  # the first one armed cannot be made on HTTP: it waits for a socket
    assert plan.take(HTTP) is None
    assert plan.take(WEBSOCKET) is ws_only
    assert either.profile == HTTP and ws_only.profile == WEBSOCKET
    assert plan.records() == [either, ws_only]
    with pytest.raises(ValueError, match="only on http"):
        plan.arm(Fault.POST_502, WEBSOCKET)
    with pytest.raises(ValueError):
        plan.arm("no-such-fault")


def test_a_node_kill_is_armed_only_on_a_proxy_that_can_kill() -> None:
    for fault in KILLS:
        with pytest.raises(ValueError, match="can kill nodes"):
            FaultPlan().arm(fault)
        assert FaultPlan(can_kill=True).arm(fault).fault is fault
    with running_proxy(_closed_port(), hold_limit=5) as proxy, httpx.Client(trust_env=False, timeout=30) as http:
        refused = http.post(f"{proxy.control}/arm", json={"fault": Fault.KILL_AFTER_ANSWER.value})
        assert refused.status_code == 400 and "can kill nodes" in refused.text
    with running_proxy(_closed_port(), hold_limit=5, killer=lambda cookies: None) as proxy:
        assert proxy.arm(Fault.KILL_AFTER_FORWARD).fault is Fault.KILL_AFTER_FORWARD


def _closed_port() -> str:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/"


def test_the_control_knob_arms_lists_and_resets() -> None:
    with running_proxy(_closed_port(), hold_limit=5) as proxy, httpx.Client(trust_env=False, timeout=30) as http:
        armed = http.post(f"{proxy.control}/arm", json={"fault": "post-502", "profile": "http"})
        assert armed.status_code == 200 and armed.json()["fault"] == "post-502"
        assert [record["fault"] for record in http.get(f"{proxy.control}/log").json()] == ["post-502"]
        refused = http.post(f"{proxy.control}/arm", json={"fault": "ws-close-after-prompt", "profile": "http"})
        assert refused.status_code == 400 and "only on websocket" in refused.text
        assert http.post(f"{proxy.control}/arm", content=b"{").status_code == 400
        assert http.get(f"{proxy.control}/nothing").status_code == 404
        assert proxy.control.endswith(CONTROL)
        assert http.post(f"{proxy.control}/reset").json() == {}
        assert http.get(f"{proxy.control}/log").json() == []
        # Nothing listens upstream: the relay answers at once, as a gateway would.
        lost = http.post(proxy.url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        assert lost.status_code == 502 and "could not be reached" in lost.text
