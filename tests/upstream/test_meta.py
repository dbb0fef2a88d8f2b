"""meta.unstable.json lists the methods the published TypeScript SDK was generated with, under the same keys.

The pinned npm package ships what its pipeline made of ACP's meta.unstable.json (`AGENT_METHODS`, ... in
dist/v2/unstable/schema/index.js); ours must give the same maps and version (fetched at test time, like the
audit), less the methods the spec adds or leaves out on purpose (listed in spec/upstream-differences.yaml).
"""

from __future__ import annotations

import json
import os
import re

import pytest

from generator import paths
from generator.read import published
from generator.read.fetch import FetchError, fetch_members
from tests.support import ROOT
from tests.upstream.deliberate import deliberate

INDEX = "package/dist/v2/unstable/schema/index.js"
MAPS = {
    "agentMethods": "AGENT_METHODS",
    "clientMethods": "CLIENT_METHODS",
    "protocolMethods": "PROTOCOL_METHODS",
    "proxyMethods": "PROXY_METHODS",
}


@pytest.fixture(scope="module")
def published_index() -> str:
    try:
        return fetch_members(published.UPSTREAM, (INDEX,))[INDEX].decode("utf-8")
    except FetchError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def _constant(source: str, name: str) -> dict[str, str]:
    found = re.search(rf"export const {name} = \{{(.*?)\}};", source, re.S)
    assert found, f"{name} is not in the package's index.js"
    return dict(re.findall(r'(\w+): "([^"]+)"', found.group(1)))


def test_the_method_maps_and_version_are_the_published_sdks(published_index):
    ours = json.loads((ROOT / paths.META_UNSTABLE).read_text(encoding="utf-8"))
    listed = deliberate()
    for key, constant in MAPS.items():
        mine = {name: method for name, method in ours[key].items() if method not in listed.method_names}
        theirs = _constant(published_index, constant)
        assert mine == {n: m for n, m in theirs.items() if m not in listed.left_out_names}, key
    version = re.search(r"export const PROTOCOL_VERSION = (\d+);", published_index)
    assert version and ours["version"] == int(version.group(1))
