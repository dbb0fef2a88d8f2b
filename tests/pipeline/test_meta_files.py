"""meta.json and meta.unstable.json come from the method files: each method under the side that handles it."""

from __future__ import annotations

import json

from generator import paths
from generator.model import naming
from generator.pipeline import load_spec
from generator.render.schema import meta
from tests.support import ROOT

SPEC = load_spec(ROOT / "spec", ROOT)


def _read(path: str) -> dict:
    return json.loads((ROOT / path).read_text(encoding="utf-8"))


def test_every_agent_client_and_protocol_method_is_listed_once_under_its_key():
    for path, methods in ((paths.META_UNSTABLE, SPEC.methods), (paths.META_STABLE, SPEC.stable_methods())):
        document = _read(path)
        for key, side in meta.MAPS:
            expected = {m.name for m in methods if m.side == side}
            assert set(document.get(key, {}).values()) == expected, (path, key)
            assert all(k == naming.method_key(v) for k, v in document.get(key, {}).items())
        if not any(m.side == "proxy" for m in methods):
            assert "proxyMethods" not in document


def test_the_stable_maps_are_part_of_the_unstable_ones_and_the_version_is_the_spec_one():
    stable, unstable = _read(paths.META_STABLE), _read(paths.META_UNSTABLE)
    for key, _ in meta.MAPS:
        assert stable.get(key, {}).items() <= unstable[key].items()
    assert stable["version"] == unstable["version"] == meta.protocol_version(SPEC) == 2


def test_method_keys_follow_acps_spelling():
    assert naming.method_key("session/set_config_option") == "session_set_config_option"
    assert naming.method_key("document/didOpen") == "document_did_open"
    assert naming.method_key("$/cancel_request") == "cancel_request"
