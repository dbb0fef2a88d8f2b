"""The TypeScript SDK's generator (hey-api with its plugins, as @agentclientprotocol/sdk 2.4.0 runs it) on the
published v2 schema and on ours: the output compiles under `tsc --strict`, and what the schema marks unstable
comes out `@experimental`.

The published schema is the control; ours passes every check it passes. The same holds for the SDK's whole step
(hey-api's output formatted with prettier, and the meta constants in index.ts), which bench/bench_sdk_generators.py
times.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sdk_pipelines import meta, typescript_sdk
from tests.sdk_pipelines.conftest import SDK_TYPES_FILE, Source

# What the SDK's pipeline turns into @experimental (its generate step looks for this text in descriptions).
UNSTABLE_MARKER = "**UNSTABLE**"


def marked(schema: dict[str, Any]) -> tuple[set[str], set[tuple[str, str]]]:
    """The defs, and the (def, property) pairs, whose description carries the unstable marker."""
    defs, props = set(), set()
    for name, definition in (schema.get("$defs") or {}).items():
        if UNSTABLE_MARKER in str(definition.get("description", "")):
            defs.add(name)
        for prop, sub in (definition.get("properties") or {}).items():
            if isinstance(sub, dict) and UNSTABLE_MARKER in str(sub.get("description", "")):
                props.add((name, prop))
    return defs, props


@pytest.mark.slow
@pytest.mark.parametrize("name", ["published", "ours"])
def test_hey_api_output_compiles_under_strict(name: str, ts_output: Any, node: str) -> None:
    output = ts_output(name)
    for file_name in typescript_sdk.OUTPUTS:
        assert (output.directory / file_name).is_file(), f"hey-api wrote no {file_name}"
    done = typescript_sdk.type_check(node, output)
    assert done.returncode == 0, f"tsc --strict on the {name} output:\n{(done.stdout + done.stderr)[-4000:]}"


@pytest.mark.slow
def test_our_set_up_reproduces_the_published_sdks_types(sources: dict[str, Source], ts_output: Any) -> None:
    """hey-api as tools/ts-pipeline/ drives it, on the published schema, declares what the published SDK ships:
    the same types (the SDK's post-step only makes hey-api's `ClientOptions` private) and the same ones
    `@experimental`, types and properties."""
    shipped = (sources["published"].directory / SDK_TYPES_FILE).read_text(encoding="utf-8")
    ours = ts_output("published").text("types.gen.ts")
    assert set(typescript_sdk.type_bodies(ours)) - {"ClientOptions"} == set(typescript_sdk.type_bodies(shipped))
    assert typescript_sdk.experimental_types(ours) == typescript_sdk.experimental_types(shipped) != set()
    assert typescript_sdk.experimental_properties(ours) == typescript_sdk.experimental_properties(shipped) != set()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["published", "ours"])
def test_marked_items_come_out_experimental(name: str, sources: dict[str, Source], ts_output: Any) -> None:
    defs, props = marked(sources[name].schema())
    assert defs or props, f"the {name} unstable schema marks nothing {UNSTABLE_MARKER}"
    types_ts = ts_output(name).text("types.gen.ts")
    assert sorted(defs - typescript_sdk.experimental_types(types_ts)) == []
    assert sorted(props - typescript_sdk.experimental_properties(types_ts)) == []


@pytest.mark.slow
def test_ours_marks_experimental_what_upstream_marks(ts_output: Any) -> None:
    published, ours = ts_output("published").text("types.gen.ts"), ts_output("ours").text("types.gen.ts")
    our_types = set(typescript_sdk.type_bodies(ours))
    types = typescript_sdk.experimental_types(published) & our_types
    props = {pair for pair in typescript_sdk.experimental_properties(published) if pair[0] in our_types}
    assert types and props, "the published output has nothing @experimental that ours also has"
    missing_types = sorted(types - typescript_sdk.experimental_types(ours))
    missing_props = sorted(props - typescript_sdk.experimental_properties(ours))
    assert (missing_types, missing_props) == ([], []), (
        f"{len(missing_types)} of {len(types)} types and {len(missing_props)} of {len(props)} properties are "
        f"@experimental upstream but not in ours: {missing_types} {missing_props}"
    )


@pytest.mark.slow
def test_ours_requires_no_property_the_published_types_leave_out(ts_output: Any) -> None:
    """Code written against the SDK builds values of its types; a property ours requires on top breaks it."""
    published = typescript_sdk.required_properties(ts_output("published").text("types.gen.ts"))
    ours = typescript_sdk.required_properties(ts_output("ours").text("types.gen.ts"))
    added = {name: sorted(ours[name] - fields) for name, fields in published.items() if ours.get(name, fields) - fields}
    listed = "; ".join(f"{name}: {', '.join(fields)}" for name, fields in added.items())
    assert not added, f"{len(added)} types require properties the published ones do not: {listed}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["published", "ours"])
def test_the_formatted_step_compiles_under_strict(name: str, ts_formatted: Any, formatting_node: str) -> None:
    done = typescript_sdk.type_check(formatting_node, ts_formatted(name))
    assert done.returncode == 0, f"tsc --strict on the formatted {name} output:\n{(done.stdout + done.stderr)[-4000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["published", "ours"])
def test_the_formatted_step_is_one_prettier_pass_over_the_plain_run(
    name: str, ts_output: Any, ts_formatted: Any, formatting_node: str
) -> None:
    """Every file is what one pass of the pinned prettier makes of the plain run's (a pass, not a fixed point:
    prettier re-breaks some long member chains of zod.gen.ts when run again, so `prettier --check` is not the
    test); index.ts then carries the meta constants after a blank line."""
    plain, formatted = ts_output(name), ts_formatted(name)
    for file_name in typescript_sdk.OUTPUTS:
        done = typescript_sdk.prettier(formatting_node, formatted, file_name, plain.text(file_name))
        assert done.returncode == 0, f"prettier on the plain {name} {file_name}:\n{done.stderr[-4000:]}"
        assert done.stdout != plain.text(file_name), f"the plain {file_name} is already prettier's layout"
        text = formatted.text(file_name)
        if file_name == "index.ts":
            assert text.startswith(done.stdout + "\nexport const AGENT_METHODS = {\n"), text[-2000:]
        else:
            assert text == done.stdout, f"the formatted {name} {file_name} is not one prettier pass over the plain one"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["published", "ours"])
def test_the_formatted_step_writes_the_meta_constants(name: str, sources: dict[str, Source], ts_formatted: Any) -> None:
    """The constants appended to index.ts hold the meta file's maps and version under the names the published SDK
    gives them (for the published schema, the maps read back from the SDK's own index: a round trip)."""
    given = sources[name].sdk_meta()
    expected = {key: value for key, value in given.items() if key in meta.SIDES.values() or key == "version"}
    assert len(expected) > 2, f"the {name} meta file has hardly any maps: {sorted(given)}"
    assert meta.emitted_meta(ts_formatted(name).text("index.ts")) == expected
