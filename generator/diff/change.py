"""A change found by the comparison, before it gets a severity: the rule, the subject, and where it is written."""

from __future__ import annotations

from dataclasses import dataclass

from ..read.loader import DataPath


@dataclass(frozen=True)
class Where:
    """A place in one side's files: the file as displayed, a data path, and whether the key is meant."""

    file: str
    path: DataPath
    key: bool = False


@dataclass(frozen=True)
class Scope:
    """What decides the severity: a method entry, a type (by its roles), a variant, or the whole spec."""

    kind: str  # "method", "type", "variant" or "global"
    name: str = ""  # method name, or type name
    method_kind: str = ""  # for "method" and "variant"
    unstable_variant: bool = False  # a variant that is unstable itself, in a stable method


@dataclass(frozen=True)
class Change:
    """One difference between OLD and NEW, located on both sides where it exists there."""

    rule: str
    subject: str
    message: str
    scope: Scope
    old: Where | None
    new: Where | None
