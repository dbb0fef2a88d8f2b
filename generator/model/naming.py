"""Naming rules in one place: slugs for pages and files, Python and other identifiers."""

from __future__ import annotations

import re


def twins(names: list[str]) -> set[str]:
    """The method names that occur more than once (a request and a notification form): the one twin rule."""
    return {name for name in names if names.count(name) > 1}


def method_slug(method: str, kind: str, *, has_twin: bool) -> str:
    """The page and file slug of a (method, kind) entry.

    `session/set_config_option` becomes `session-set-config-option`; `$/cancel_request` becomes
    `cancel-request`. When a method name has both a request and a notification form (`has_twin`), the
    notification gets a `-notification` suffix so that both entries keep their own page.
    """
    base = method.removeprefix("$/").replace("/", "-").replace("_", "-").strip("-").lower()
    return f"{base}-notification" if has_twin and kind == "notification" else base


def snake_case(name: str) -> str:
    """`idempotencyKey` -> `idempotency_key`; `no-response` -> `no_response`."""
    name = name.replace("-", "_")
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def constant_case(name: str) -> str:
    """`no-response` -> `NO_RESPONSE`."""
    return snake_case(name).upper()


def pascal_case(name: str) -> str:
    """`no-response` -> `NoResponse`; `safe` -> `Safe`."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_/\s]+", name) if part)


def camel_case(name: str) -> str:
    """`no-response` -> `noResponse`."""
    pascal = pascal_case(name)
    return pascal[:1].lower() + pascal[1:]


def method_constant(method: str) -> str:
    """The constant that names a method in generated code: `session/set_config_option` -> `SESSION_SET_CONFIG_OPTION`.

    `$/cancel_request` becomes `CANCEL_REQUEST`, as its slug does.
    """
    return constant_case(method_slug(method, "request", has_twin=False))


def method_key(method: str) -> str:
    """A method's key in ACP's method-name maps (meta.json): `session/set_config_option` -> `session_set_config_option`,
    `document/didOpen` -> `document_did_open`, `$/cancel_request` -> `cancel_request`."""
    return snake_case(method.removeprefix("$/").replace("/", "_"))


def title_constant(title: str) -> str:
    """A human title as a constant: `Invalid params` -> `INVALID_PARAMS`."""
    return "_".join(re.findall(r"[A-Za-z0-9]+", title)).upper()
