"""The OpenAPI 3.1 document of the HTTP API: its paths here, its schemas in
ldp_telemetry.aggregator.api.schemas (the answers' derived from their types). Tests keep it
equal to the routes and check real answers against it."""

from __future__ import annotations

from typing import Any

from ldp_telemetry.aggregator.api.schemas import SCHEMAS
from ldp_telemetry.shared.contract import (
    ESTIMATES_PATH,
    HEALTH_PATH,
    HEAVY_HITTERS_PATH,
    METRICS_PATH,
    OPENAPI_PATH,
    PROBLEM_MEDIA_TYPE,
    PROTOCOL_HEADER,
    PROTOCOL_VERSION,
    READY_PATH,
    SHUFFLED_PATH,
    SHUFFLED_SLICES,
    SHUFFLED_UPLOADS,
    TASK_PATH,
    TASKS_PATH,
    UNSUPPORTED_PROTOCOL,
    UPLOAD_KEY_PATH,
    UPLOAD_PATH,
)

PROBLEM = {"$ref": "#/components/responses/Problem"}
JSON = "application/json"


def _json(schema: str) -> dict[str, Any]:
    return {"content": {JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def _ok(description: str, schema: str | None = None) -> dict[str, Any]:
    return {"description": description, **(_json(schema) if schema else {})}


TASK_ID = {"name": "task_id", "in": "path", "required": True, "schema": {"type": "string"}}
PROTOCOL = {
    "name": PROTOCOL_HEADER,
    "in": "header",
    "required": False,
    "description": "The protocol version the client follows (PROTOCOL.md §2); another "
    f"major version is refused with 400 {UNSUPPORTED_PROTOCOL}.",
    "schema": {"type": "string", "example": PROTOCOL_VERSION},
}

PATHS: dict[str, Any] = {
    TASKS_PATH: {
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
    TASK_PATH: {
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
    UPLOAD_PATH: {
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
                "429": PROBLEM,
                "503": PROBLEM,
            },
        },
    },
    UPLOAD_KEY_PATH: {
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
    SHUFFLED_PATH: {
        "put": {
            "summary": "A shuffled batch from a shuffler (shuffler token): counted like an "
            "upload; the batch and its distinct uploads (?uploads=K) are recorded once per id",
            "parameters": [
                TASK_ID,
                {"name": "batch_id", "in": "path", "required": True, "schema": {"type": "string"}},
                {
                    "name": SHUFFLED_UPLOADS,
                    "in": "query",
                    "required": True,
                    "schema": {"type": "integer"},
                },
                {
                    "name": SHUFFLED_SLICES,
                    "in": "query",
                    "required": False,
                    "description": "a task with dimensions: each slice's distinct uploads "
                    "in the batch, as index:K pairs separated by commas",
                    "schema": {"type": "string", "pattern": "^[0-9]+:[0-9]+(,[0-9]+:[0-9]+)*$"},
                },
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
                "429": PROBLEM,
                "503": PROBLEM,
            },
        },
    },
    ESTIMATES_PATH: {
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
    HEAVY_HITTERS_PATH: {
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
    HEALTH_PATH: {"get": {"summary": "Liveness", "responses": {"200": _ok("Alive")}}},
    READY_PATH: {
        "get": {
            "summary": "Readiness: the database accepts a write",
            "responses": {"200": _ok("Ready"), "503": PROBLEM},
        }
    },
    METRICS_PATH: {
        "get": {
            "summary": "Prometheus metrics",
            "responses": {"200": {"description": "Prometheus text format"}},
        }
    },
    OPENAPI_PATH: {"get": {"summary": "This document", "responses": {"200": _ok("OpenAPI 3.1")}}},
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
                        PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}
                    },
                }
            },
        },
    }
