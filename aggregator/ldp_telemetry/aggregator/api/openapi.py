"""The OpenAPI 3.1 document of the HTTP API (a test keeps it equal to the routes)."""

from __future__ import annotations

from typing import Any

from ldp_telemetry.shared.contract import REJECTION_REASONS
from ldp_telemetry.shared.mechanisms.auto import AUTO, DEFAULT_MAX_REPORT_BYTES
from ldp_telemetry.shared.mechanisms.base import Option
from ldp_telemetry.shared.mechanisms.registry import MECHANISMS, all_options
from ldp_telemetry.shared.task import TASK_ID as TASK_ID_PATTERN

PROBLEM = {"$ref": "#/components/responses/Problem"}
JSON = "application/json"


def _json(schema: str) -> dict[str, Any]:
    return {"content": {JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def _ok(description: str, schema: str | None = None) -> dict[str, Any]:
    return {"description": description, **(_json(schema) if schema else {})}


TASK_ID = {"name": "task_id", "in": "path", "required": True, "schema": {"type": "string"}}
PROTOCOL = {
    "name": "LDP-Protocol",
    "in": "header",
    "required": False,
    "description": "The protocol version the client follows (PROTOCOL.md §2); another "
    "major version is refused with 400 unsupported_protocol.",
    "schema": {"type": "string", "example": "1.0"},
}

PATHS: dict[str, Any] = {
    "/v1/tasks": {
        "get": {
            "summary": "List the tasks' public configurations",
            "responses": {"200": _ok("The tasks", "TaskList")},
        },
        "post": {
            "summary": "Create a task (admin token); the server draws hash_seed",
            "security": [{"bearer": []}],
            "requestBody": {"required": True, **_json("TaskParameters")},
            "responses": {
                "201": _ok("The new task (plus upload_key if asked for)", "Task"),
                "400": PROBLEM,
                "401": PROBLEM,
                "403": PROBLEM,
                "409": PROBLEM,
            },
        },
    },
    "/v1/tasks/{task_id}": {
        "get": {
            "summary": "A task's public configuration; ETag is its fingerprint",
            "parameters": [TASK_ID],
            "responses": {
                "200": _ok("The task", "Task"),
                "304": {"description": "If-None-Match matched"},
                "404": PROBLEM,
            },
        },
    },
    "/v1/tasks/{task_id}/reports": {
        "post": {
            "summary": "Upload a batch of privatized reports (gzip allowed)",
            "description": "Each report id is counted once within its acceptance "
            "window; the answer is sent after the commit.",
            "parameters": [TASK_ID, PROTOCOL],
            "security": [{}, {"bearer": []}],
            "requestBody": {"required": True, **_json("Batch")},
            "responses": {
                "200": _ok("Accepted count and rejected reports", "UploadResult"),
                "400": PROBLEM,
                "401": PROBLEM,
                "404": PROBLEM,
                "413": PROBLEM,
                "415": PROBLEM,
                "503": PROBLEM,
            },
        },
    },
    "/v1/tasks/{task_id}/upload-key": {
        "get": {
            "summary": "The SHA-256 (hex) of the task's upload key, null when uploads are "
            "public (shuffler token): a shuffler refuses the uploads the collector would",
            "parameters": [TASK_ID],
            "security": [{"bearer": []}],
            "responses": {
                "200": {
                    "description": "task_id and upload_key_sha256 (string or null)",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                "401": PROBLEM,
                "403": PROBLEM,
                "404": PROBLEM,
            },
        },
    },
    "/v1/tasks/{task_id}/shuffled/{batch_id}": {
        "put": {
            "summary": "A shuffled batch from a shuffler (shuffler token): counted like an "
            "upload; the batch and its distinct uploads (?uploads=K) are recorded once per id",
            "parameters": [
                TASK_ID,
                {"name": "batch_id", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "uploads", "in": "query", "required": True, "schema": {"type": "integer"}},
            ],
            "security": [{"bearer": []}],
            "requestBody": {"required": True, **_json("Batch")},
            "responses": {
                "200": _ok("Accepted count and rejected reports", "UploadResult"),
                "400": PROBLEM,
                "401": PROBLEM,
                "403": PROBLEM,
                "404": PROBLEM,
                "413": PROBLEM,
                "503": PROBLEM,
            },
        },
    },
    "/v1/tasks/{task_id}/estimates": {
        "post": {
            "summary": "Estimate counts with confidence intervals (analyst token)",
            "parameters": [TASK_ID],
            "security": [{"bearer": []}],
            "requestBody": {"required": True, **_json("EstimateRequest")},
            "responses": {
                "200": _ok("Estimates", "EstimateResult"),
                "400": PROBLEM,
                "401": PROBLEM,
                "404": PROBLEM,
                "422": PROBLEM,
            },
        },
    },
    "/v1/tasks/{task_id}/heavy-hitters": {
        "post": {
            "summary": "The most frequent strings, found without candidates (analyst "
            "token; tasks whose mechanism can discover, e.g. hh)",
            "parameters": [TASK_ID],
            "security": [{"bearer": []}],
            "requestBody": {"required": True, **_json("HeavyHitterRequest")},
            "responses": {
                "200": _ok("Discovered strings", "HeavyHitterResult"),
                "400": PROBLEM,
                "401": PROBLEM,
                "404": PROBLEM,
                "422": PROBLEM,
            },
        },
    },
    "/healthz": {"get": {"summary": "Liveness", "responses": {"200": _ok("Alive")}}},
    "/readyz": {
        "get": {
            "summary": "Readiness: the database accepts a write",
            "responses": {"200": _ok("Ready"), "503": PROBLEM},
        }
    },
    "/metrics": {
        "get": {
            "summary": "Prometheus metrics",
            "responses": {"200": {"description": "Prometheus text format"}},
        }
    },
    "/v1/openapi.json": {
        "get": {"summary": "This document", "responses": {"200": _ok("OpenAPI 3.1")}}
    },
}

_NUMBER = {"type": "number"}
_INTEGER = {"type": "integer"}


def _option_schema(option: Option) -> dict[str, Any]:
    """Return the JSON schema of one task parameter."""
    kinds: dict[str, dict[str, Any]] = {
        "strings": {"type": "array", "items": {"type": "string"}},
        "object": {"type": "object"},
    }
    kind = kinds.get(option.kind, {"type": option.kind})
    return {**kind, "description": option.help}


SCHEMAS: dict[str, Any] = {
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
        },
    },
    "Task": {
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
            "seal": {
                "type": "object",
                "description": "a sealed task's current HPKE public key: kem, kdf, aead "
                "(IANA ids 32, 1, 3), key_id, public_key (PROTOCOL.md §10)",
            },
        },
    },
    "TaskList": {
        "type": "object",
        "properties": {"tasks": {"type": "array", "items": {"$ref": "#/components/schemas/Task"}}},
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
                    "(PROTOCOL.md lists them per mechanism)",
                },
            }
        },
    },
    "UploadResult": {
        "type": "object",
        "properties": {
            "accepted": _INTEGER,
            "rejected": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "report_id": {"type": ["string", "null"]},
                        "reason": {"enum": list(REJECTION_REASONS)},
                        "message": {"type": "string"},
                    },
                },
            },
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
    "EstimateResult": {
        "type": "object",
        "properties": {
            "task_id": {"type": "string"},
            "mechanism": {"type": "string"},
            "n": _INTEGER,
            "epsilon": _NUMBER,
            "effective_epsilon": _NUMBER,
            "central_epsilon": {"type": ["number", "null"]},
            "delta": _NUMBER,
            "smallest_batch": {"type": ["integer", "null"]},
            "central_epsilon_reason": {"type": "string"},
            "level": _NUMBER,
            "start": {"type": ["integer", "null"]},
            "end": {"type": ["integer", "null"]},
            "anomaly": {"type": "object"},
            "poisoning": {"type": "object"},
            "estimates": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "value": {},
                        "estimate": _NUMBER,
                        "std_error": _NUMBER,
                        "ci_low": _NUMBER,
                        "ci_high": _NUMBER,
                        "reliable": {
                            "type": "boolean",
                            "description": "numeric (sw): false when the interval cannot "
                            "be trusted; reason says why",
                        },
                        "reason": {"type": "string"},
                    },
                },
            },
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
    "HeavyHitterResult": {
        "type": "object",
        "properties": {
            "task_id": {"type": "string"},
            "mechanism": {"type": "string"},
            "n": _INTEGER,
            "epsilon": _NUMBER,
            "effective_epsilon": _NUMBER,
            "central_epsilon": {"type": ["number", "null"]},
            "delta": _NUMBER,
            "smallest_batch": {"type": ["integer", "null"]},
            "central_epsilon_reason": {"type": "string"},
            "level": _NUMBER,
            "start": {"type": ["integer", "null"]},
            "end": {"type": ["integer", "null"]},
            "levels": _INTEGER,
            "examined": {"type": "array", "items": _INTEGER},
            "reliable_z": _NUMBER,
            "heavy_hitters": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "string"},
                        "estimate": _NUMBER,
                        "std_error": _NUMBER,
                        "ci_low": _NUMBER,
                        "ci_high": _NUMBER,
                        "reliable": {"type": "boolean"},
                    },
                },
            },
        },
    },
    "Problem": {
        "type": "object",
        "required": ["type", "title", "status", "detail"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": _INTEGER,
            "detail": {"type": "string"},
        },
    },
}


def document() -> dict[str, Any]:
    """Return the OpenAPI document."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "ldp-telemetry aggregator", "version": "1"},
        "paths": PATHS,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {
                "Problem": {
                    "description": "A problem (RFC 9457)",
                    "content": {
                        "application/problem+json": {
                            "schema": {"$ref": "#/components/schemas/Problem"}
                        }
                    },
                }
            },
        },
    }
