"""Checking call arguments against a tool's `inputSchema` before anything goes upstream.

JSON Schema 2020-12 unless the schema names another draft in `$schema`. A schema that cannot be
used (invalid, or too hostile to evaluate) does not block the call: the upstream then judges it.

Regular expressions come from the upstream, and Python's `re` can take exponential time on a
pattern such as `^(a+)+$` without releasing the GIL: one call would stall every caller. The
`pattern`, `patternProperties` and `additionalProperties` keywords therefore match with the
`regex` package and a time limit (`PATTERN_SECONDS`); a pattern it cannot decide in time, or
cannot compile, is left to the upstream. A schema that combines `patternProperties` with
`unevaluatedProperties` (whose evaluation jsonschema matches with `re` itself) goes unchecked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import jsonschema
import regex
from cachetools import LRUCache, cached
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from referencing.exceptions import Unresolvable

if TYPE_CHECKING:
    # The class of the validators jsonschema creates (a name of its stubs only): keyword functions
    # receive one, and it has `descend`, which the public `Validator` protocol lacks.
    from jsonschema.validators import _Validator

logger = logging.getLogger(__name__)

MAX_PROBLEMS = 20
_MAX_MESSAGE = 300
_MAX_VALIDATORS = 4096
PATTERN_SECONDS = 0.05
"""Longest a schema's regular expression may take on one string before it is left unjudged."""
_MAX_SCHEMA_NODES = 100_000
_bounded_classes: dict[type[Validator], type[Validator]] = {}


def _search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches somewhere in `text`; None when it cannot tell in time (or at all)."""
    try:
        return regex.search(pattern, text, timeout=PATTERN_SECONDS) is not None
    except (TimeoutError, regex.error, RecursionError):
        return None


def _pattern(validator: Validator, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    if validator.is_type(instance, "string") and _search(pattern, instance) is False:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: _Validator, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if _search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(
    validator: _Validator, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    named, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    # A name a pattern cannot judge in time counts as matched: the upstream decides about it.
    extras = sorted(
        (
            name
            for name in instance
            if name not in named and not any(_search(pattern, name) is not False for pattern in patterns)
        ),
        key=str,
    )
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif additional is False and extras:
        listed = ", ".join(repr(extra) for extra in extras)
        yield ValidationError(f"Additional properties are not allowed ({listed} unexpected)")


def _bounded(cls: type[Validator]) -> type[Validator]:
    """`cls` with the regular-expression keywords time-limited."""
    bounded = _bounded_classes.get(cls)
    if bounded is None:
        bounded = _bounded_classes[cls] = jsonschema.validators.extend(
            cls,
            {
                "pattern": _pattern,
                "patternProperties": _pattern_properties,
                "additionalProperties": _additional_properties,
            },
        )
    return bounded


def _keywords(schema: Any) -> set[str]:
    """Every key of every object in `schema`, looking at its first `_MAX_SCHEMA_NODES` nodes."""
    found: set[str] = set()
    pending, seen = [schema], 0
    while pending and seen < _MAX_SCHEMA_NODES:
        node = pending.pop()
        seen += 1
        if isinstance(node, Mapping):
            found.update(key for key in node if isinstance(key, str))
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return found


def _compile(schema: Mapping[str, Any]) -> Validator | None:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(dict(schema))  # jsonschema counts only dicts as JSON objects
    except (SchemaError, RecursionError):
        logger.warning("an upstream tool has an invalid inputSchema; its arguments go unchecked")
        return None
    if {"patternProperties", "unevaluatedProperties"} <= _keywords(schema):
        logger.warning(
            "an upstream tool's inputSchema matches patterns unboundedly; its arguments go unchecked"
        )
        return None
    return _bounded(cls)(schema)


@cached(LRUCache(_MAX_VALIDATORS), key=lambda key, _schema: key)
def _validator(key: str, schema: Mapping[str, Any]) -> Validator | None:
    """The compiled schema, kept (least recently used dropped) under a key naming its content."""
    return _compile(schema)


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
