"""Salvage costs what it saves (issue 35, item 2): reading is linear in the message, and a message that needs more
than `MAX_SALVAGES` salvages is refused with -32602 naming the limit.

The bounds on time here are generous (a busy two-core machine); the figures are `make bench` (bench_salvage).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from acp_v2_schema import models
from acp_v2_schema import protocol as M
from acp_v2_schema.models._salvage import MAX_SALVAGES, SKIP_INVALID_ITEMS
from acp_v2_schema.protocol import KnownErrorCode
from acp_v2_schema.reader import ROUTES, Invalid, MessageReader, Request
from pydantic import ValidationError

from tests.support import ROOT

PROMPT_TYPE = getattr(models, ROUTES[(M.SESSION_PROMPT, "request")].params or "")


def _params(audience: list[Any]) -> dict[str, Any]:
    block = {"type": "text", "text": "hi", "annotations": {"audience": audience}}
    return {"sessionId": "s", "prompt": [block]}


def _line(audience: list[Any], request_id: int = 3) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": M.SESSION_PROMPT, "params": _params(audience)})


def test_each_skipped_item_is_recorded_at_its_input_index_and_the_good_ones_kept():
    audience = [1, "user", 2, "assistant", 3]
    read = PROMPT_TYPE.model_validate_json(json.dumps(_params(audience)))
    assert read.prompt[0].annotations.audience == ["user", "assistant"]
    found = [(s.path, s.rule, s.value) for s in read.model_salvaged]
    where = ("prompt", 0, "annotations", "audience")
    assert found == [((*where, i), SKIP_INVALID_ITEMS, audience[i]) for i in (0, 2, 4)], found
    assert all(s.reason for s in read.model_salvaged)


def test_a_message_at_the_limit_is_read_and_one_past_it_refused_naming_the_limit():
    read = PROMPT_TYPE.model_validate_json(json.dumps(_params([1] * MAX_SALVAGES)))
    assert len(read.model_salvaged) == MAX_SALVAGES and read.prompt[0].annotations.audience == []
    with pytest.raises(ValidationError) as caught:
        PROMPT_TYPE.model_validate_json(json.dumps(_params([1] * (MAX_SALVAGES + 1))))
    assert str(MAX_SALVAGES) in str(caught.value)
    with pytest.raises(ValidationError):
        PROMPT_TYPE.model_validate(_params([1] * (MAX_SALVAGES + 1)))


def test_the_reader_refuses_a_message_past_the_limit_with_invalid_params_and_its_id():
    for reader in (MessageReader(), MessageReader(strict_json=True, keep_raw=True)):
        [found] = reader.read_line(_line([1] * (MAX_SALVAGES + 1), request_id=9))
        assert isinstance(found, Invalid) and found.code == KnownErrorCode.INVALID_PARAMS, found
        assert found.answer_id == 9 and any(str(MAX_SALVAGES) in p for p in found.problems), found.problems
        [fine] = reader.read_line(_line([1] * MAX_SALVAGES, request_id=10))
        assert isinstance(fine, Request) and len(fine.params.model_salvaged) == MAX_SALVAGES


@pytest.mark.parametrize(("count", "seconds"), [(1_000, 3), (100_000, 10)])
def test_many_bad_items_are_read_in_time_linear_in_the_message(count, seconds):
    """1,000 bad items took 14 s (each item's reason searched every error); 10^5 ran past a minute."""
    line = _line([1] * count)
    started = time.process_time()
    [found] = MessageReader().read_line(line)
    spent = time.process_time() - started
    assert isinstance(found, Invalid | Request)
    assert spent < seconds, f"{count} bad items took {spent:.1f} s"


@pytest.mark.parametrize("page", ["README.md", "generated/python/README.md", "site/sdk-authors.md"])
def test_the_limit_is_documented_with_its_value(page):
    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    assert "MAX_SALVAGES" in text and f"more than {MAX_SALVAGES:,} salvages" in text


def test_every_skip_invalid_items_field_has_an_array_the_lenient_read_reaches():
    """The lenient read skips items where it finds the field's array (itself, or in its default, null or union
    choices); a field whose array stood elsewhere would lose its salvage without a word."""
    from acp_v2_schema.models import _base
    from acp_v2_schema.models._salvage import _SKIP, RULES

    checked = 0
    for name, fields in RULES.items():
        cls = getattr(models, name)
        cls.model_rebuild()
        schema = cls.__pydantic_core_schema__
        schema = schema["schema"] if schema["type"] == "definitions" else schema
        by_wire = {f.get("validation_alias", n): f for n, f in schema["schema"]["fields"].items()}
        for wire, flags in fields.items():
            if flags & _SKIP:
                assert len(_base.arrays_in(by_wire[wire]["schema"])) == 1, (name, wire)
                checked += 1
    assert checked
