"""Checking call arguments against a tool's `inputSchema` before anything goes upstream.

JSON Schema 2020-12 unless the schema names another draft in `$schema`. A schema that cannot be
used (invalid, or too hostile to evaluate) does not block the call: the upstream then judges it.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from referencing.exceptions import Unresolvable

logger = logging.getLogger(__name__)

MAX_PROBLEMS = 20
_MAX_MESSAGE = 300
_MAX_VALIDATORS = 4096
_validators: OrderedDict[str, Validator | None] = OrderedDict()


def _compile(schema: Mapping[str, Any]) -> Validator | None:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except (SchemaError, RecursionError):
        logger.warning("an upstream tool has an invalid inputSchema; its arguments go unchecked")
        return None
    return cls(schema)


def _validator(key: str, schema: Mapping[str, Any]) -> Validator | None:
    """The compiled schema, kept (least recently used dropped) under a key naming its content."""
    if key in _validators:
        _validators.move_to_end(key)
        return _validators[key]
    validator = _validators[key] = _compile(schema)
    if len(_validators) > _MAX_VALIDATORS:
        _validators.popitem(last=False)
    return validator


def argument_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any], *, key: str) -> list[str]:
    """Each way `arguments` break `schema`, as `at <where>: <what>`; empty when they fit.

    `key` names the schema's content (a tool's digest already does), so that a call costs no
    re-serialisation of its schema to find the compiled validator.
    """
    validator = _validator(key, schema)
    if validator is None:
        return []
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path)))
    except (RecursionError, Unresolvable, SchemaError):
        return []
    problems = []
    for error in errors[:MAX_PROBLEMS]:
        where = "/" + "/".join(str(part) for part in error.absolute_path)
        message = error.message if len(error.message) <= _MAX_MESSAGE else error.message[:_MAX_MESSAGE] + "…"
        problems.append(f"at {where}: {message}")
    if len(errors) > MAX_PROBLEMS:
        problems.append(f"… and {len(errors) - MAX_PROBLEMS} more")
    return problems
