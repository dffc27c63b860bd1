"""The OpenAPI document's schemas: the answers derived from their types, the requests.

Answers are typed once (:mod:`ldp_telemetry.shared.answers`, and the upload answer and
problem document in :mod:`ldp_telemetry.shared.contract`); :func:`schema_of` turns such a
type into its JSON Schema, so the code that builds an answer and the document that
describes it cannot disagree. Requests are checked by hand-written parsers
(ldp_telemetry.aggregator.core.analysis.query, .tasks), whose fields are written here.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints, is_typeddict

from ldp_telemetry.shared.answers import EstimateAnswer, HeavyHitterAnswer
from ldp_telemetry.shared.contract import Doc, OneOf, Problem, UploadAnswer
from ldp_telemetry.shared.mechanisms.auto import AUTO, DEFAULT_MAX_REPORT_BYTES
from ldp_telemetry.shared.mechanisms.base import Option
from ldp_telemetry.shared.mechanisms.registry import MECHANISMS, all_options
from ldp_telemetry.shared.task import TASK_ID as TASK_ID_PATTERN

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
_NUMBER = {"type": "number"}
_INTEGER = {"type": "integer"}


def schema_of(kind: Any) -> dict[str, Any]:
    """Return the JSON Schema of a type an answer is written with: a TypedDict (an
    object; its required keys required), ``list[X]``, ``X | None``, str, int, float, bool,
    Any; ``Annotated`` with :class:`Doc` (a description) or :class:`OneOf` (an enum)."""
    if is_typeddict(kind):
        return _object(kind)
    origin, args = get_origin(kind), get_args(kind)
    if origin is Annotated:
        schema = schema_of(args[0])
        for note in kind.__metadata__:
            if isinstance(note, Doc):
                schema["description"] = note.text
            elif isinstance(note, OneOf):
                schema["enum"] = list(note.values)
        return schema
    if origin in (Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        if len(present) != 1 or len(args) != 2:
            raise TypeError(f"only X | None is written in answers, not {kind}")
        inner = schema_of(present[0])
        return {**inner, "type": [inner["type"], "null"]}
    if origin is list:
        return {"type": "array", "items": schema_of(args[0])}
    if kind is Any:
        return {}
    if kind in _JSON_TYPES:
        return {"type": _JSON_TYPES[kind]}
    raise TypeError(f"no JSON Schema for {kind!r}")


def _object(kind: Any) -> dict[str, Any]:
    fields = get_type_hints(kind, include_extras=True)
    schema: dict[str, Any] = {"type": "object"}
    if kind.__doc__:
        schema["description"] = kind.__doc__.strip().split("\n\n")[0]
    required = [name for name in fields if name in kind.__required_keys__]
    if required:
        schema["required"] = required
    schema["properties"] = {name: schema_of(hint) for name, hint in fields.items()}
    return schema


def _option_schema(option: Option) -> dict[str, Any]:
    """Return the JSON schema of one task parameter."""
    kinds: dict[str, dict[str, Any]] = {
        "strings": {"type": "array", "items": {"type": "string"}},
        "object": {"type": "object"},
    }
    kind = kinds.get(option.kind, {"type": option.kind})
    return {**kind, "description": option.help}


# A task's public dimensions (PROTOCOL.md §1.1): sent in the clear, not protected by LDP.
DIMENSIONS: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "maxItems": 3,
    "description": "public dimensions, each a closed list of values (other is implied); "
    "reports carry them in the clear: they are not protected by LDP",
    "items": {
        "type": "object",
        "required": ["name", "values"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,31}$"},
            "values": {"type": "array", "minItems": 1, "maxItems": 63, "items": {"type": "string"}},
        },
    },
}

REQUESTS: dict[str, Any] = {
    "TaskParameters": {
        "type": "object",
        "required": ["task_id", "mechanism"],
        "additionalProperties": False,
        "properties": {
            "task_id": {"type": "string", "pattern": TASK_ID_PATTERN.pattern},
            "mechanism": {"enum": [*MECHANISMS, AUTO]},
            "expected_distinct": {
                **_INTEGER,
                "description": "auto, for a task without a domain: distinct values expected",
            },
            "max_report_bytes": {
                **_INTEGER,
                "description": f"auto: the largest report (default {DEFAULT_MAX_REPORT_BYTES})",
            },
            **{option.name: _option_schema(option) for option in all_options().values()},
            "time_precision": _INTEGER,
            "min_batch_size": _INTEGER,
            "upload_key_required": {"type": "boolean"},
            "archive": {
                "type": "boolean",
                "description": "keep the privatized reports accepted, besides the sums",
            },
            "sealed": {
                "type": "boolean",
                "description": "reports carry their payload HPKE-sealed to the collector "
                "(PROTOCOL.md §10; needs a key: ldp-aggregator keys new)",
            },
            "dimensions": DIMENSIONS,
            "min_slice_size": {
                **_INTEGER,
                "description": "with dimensions: fewest reports a slice is answered alone for "
                "(default max(50, min_batch_size), never below min_batch_size)",
            },
        },
    },
    "Batch": {
        "type": "object",
        "required": ["reports"],
        "additionalProperties": False,
        "properties": {
            "reports": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["report_id", "fingerprint", "time"],
                    "description": "plus the payload fields of the task's mechanism "
                    "(PROTOCOL.md lists them per mechanism) and, for a task with "
                    "dimensions, dims: each declared name's value or other, in the clear",
                },
            }
        },
    },
    "EstimateRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "candidates": {"type": "array", "items": {"type": "string"}},
            "start": _INTEGER,
            "end": _INTEGER,
            "level": _NUMBER,
            "fake_fraction": _NUMBER,
            "normalize": {"type": "boolean"},
        },
    },
    "HeavyHitterRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "top": _INTEGER,
            "survivors": _INTEGER,
            "start": _INTEGER,
            "end": _INTEGER,
            "level": _NUMBER,
        },
    },
}

# A task as served (shared.TaskConfig.to_dict() and what the collector adds): its fields
# follow the mechanisms' registry, so it is written out rather than typed.
TASK: dict[str, Any] = {
    "type": "object",
    "description": "shared.TaskConfig.to_dict()",
    "required": ["task_id", "mechanism", "fingerprint", "effective_epsilon"],
    "properties": {
        "task_id": {"type": "string"},
        "mechanism": {"type": "string"},
        "fingerprint": {"type": "string"},
        "hash_seed": _INTEGER,
        "effective_epsilon": _NUMBER,
        "effective_epsilon_inf": _NUMBER,
        "thresholds": {"type": "object", "description": "the integer thresholds (oue, ss)"},
        "attack_success": {
            **_NUMBER,
            "description": "the chance that one report names the value to an adversary "
            "holding every domain value equally likely",
        },
        "selection": {"type": "object", "description": "how auto chose the mechanism"},
        "upload_key": {"type": "string"},
        "sealed": {"type": "boolean"},
        "protocol": {"type": "string", "description": "1.0; 1.1 for a task with dimensions"},
        "dimensions": DIMENSIONS,
        "min_slice_size": _INTEGER,
        "seal": {
            "type": "object",
            "description": "a sealed task's current HPKE public key: kem, kdf, aead "
            "(IANA ids 32, 1, 3), key_id, public_key (PROTOCOL.md §10)",
        },
    },
}

# Each answer's schema, derived from its type (the names are the document's since 1.0).
ANSWERS: dict[str, Any] = {
    "UploadResult": UploadAnswer,
    "EstimateResult": EstimateAnswer,
    "HeavyHitterResult": HeavyHitterAnswer,
    "Problem": Problem,
}

SCHEMAS: dict[str, Any] = {
    **REQUESTS,
    "Task": TASK,
    "TaskList": {
        "type": "object",
        "properties": {"tasks": {"type": "array", "items": {"$ref": "#/components/schemas/Task"}}},
    },
    **{name: schema_of(kind) for name, kind in ANSWERS.items()},
}
