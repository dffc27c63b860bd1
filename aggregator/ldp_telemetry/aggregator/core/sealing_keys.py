"""The collector's HPKE keys for sealed tasks: a key file, rotation, and the hooks that use it.

Private keys live in one JSON file (``SEAL_KEYS``; by default beside a SQLite database, named after
it, ``try-ldp.sqlite3`` → ``try-ldp.seal-keys.json``; with PostgreSQL, ``seal-keys.json`` in the
instance folder), mode 0600, written whole and atomically by ``ldp-aggregator keys``
(:mod:`ldp_telemetry.aggregator.cli.key_commands`); never in a task and never in the database, so a
database backup, an analyst's read access or an archive holds no key that opens reports. Several
collector nodes share the file the way they share a TLS key.

The newest key is *current*: every sealed task publishes its public half (``seal``, served
beside the task, not fingerprinted, so a rotation keeps the task, its sums and the
devices' queues). Older keys still open reports until retired: after ``keys new``, keep the
old key for at least the acceptance window (reports sealed to it may wait that long in
devices' queues and the shuffler's spool), then ``keys retire`` deletes it. A report sealed
to a key the file does not hold is refused as ``unknown_seal_key``.

Each process re-reads the file when it changes (checked at most once a second), so a
rotation needs no restart.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from ldp_telemetry.aggregator.store.backends import split_url
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.errors import DecodeError
from ldp_telemetry.shared.sealing import (
    SealKey,
    new_key_id,
    new_private_key,
    private_key_bytes,
    private_key_from_bytes,
    public_key_bytes,
)
from ldp_telemetry.shared.wire import b64decode, b64encode

log = logging.getLogger("ldp.seal_keys")
FILE_NAME = "seal-keys.json"
SUFFIX = ".seal-keys.json"  # the default beside a SQLite database
RELOAD_EVERY = 1.0  # seconds between two checks of the key file's modification time


@dataclass(frozen=True)
class KeyEntry:
    """One key of the file: its id, creation time and private key."""

    key_id: str
    created: int
    private_key: X25519PrivateKey

    @property
    def public(self) -> SealKey:
        """Return the public key a task publishes."""
        return SealKey(self.key_id, public_key_bytes(self.private_key))


def read_keys(path: Path) -> list[KeyEntry]:
    """Return the file's keys, oldest first (none if there is no file yet)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    try:
        return [
            KeyEntry(
                str(item["key_id"]),
                int(item["created"]),
                private_key_from_bytes(b64decode(item["private_key"], 32, "private_key")),
            )
            for item in data["keys"]
        ]
    except (KeyError, TypeError, ValueError, DecodeError) as error:
        raise ValueError(f"the seal key file {path} is malformed: {error}") from None


def write_keys(path: Path, keys: list[KeyEntry]) -> None:
    """Replace the file with ``keys`` atomically, readable by its owner only."""
    data = {
        "keys": [
            {
                "key_id": k.key_id,
                "created": k.created,
                "private_key": b64encode(private_key_bytes(k.private_key)),
            }
            for k in keys
        ]
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def add_key(path: Path, now: float | None = None) -> KeyEntry:
    """Create a key, make it the current one and return it (older keys keep opening)."""
    entry = KeyEntry(new_key_id(), int(time.time() if now is None else now), new_private_key())
    write_keys(path, [*read_keys(path), entry])
    return entry


def retire_key(path: Path, key_id: str, *, min_age: int, now: float | None = None) -> KeyEntry:
    """Delete a superseded key from the file; raise ValueError saying why not.

    ``min_age``: seconds the key must have been superseded (the acceptance window: reports
    sealed to it before then may still arrive); 0 retires it at once.
    """
    keys = read_keys(path)
    index = next((i for i, k in enumerate(keys) if k.key_id == key_id), None)
    if index is None:
        raise ValueError(f"there is no key {key_id!r} in {path}")
    if index == len(keys) - 1:
        raise ValueError(
            f"key {key_id!r} is the current key: create its successor first (keys new)"
        )
    superseded = keys[index + 1].created
    waited = int(time.time() if now is None else now) - superseded
    if waited < min_age:
        raise ValueError(
            f"key {key_id!r} was superseded {waited} s ago; reports sealed to it may arrive for "
            f"{min_age} s (the acceptance window): retire it later, or pass --now"
        )
    write_keys(path, keys[:index] + keys[index + 1 :])
    return keys[index]


class Keyring:
    """A process's view of the key file, re-read when the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._checked = float("-inf")
        self._keys: list[KeyEntry] = []
        self._private: dict[str, X25519PrivateKey] = {}

    def private_keys(self) -> dict[str, X25519PrivateKey]:
        """Return key id → private key for every key that still opens reports."""
        self._refresh()
        return self._private

    def current(self) -> SealKey | None:
        """Return the public key sealed tasks publish now (None: no key yet)."""
        self._refresh()
        return self._keys[-1].public if self._keys else None

    def _refresh(self) -> None:
        if time.monotonic() - self._checked < RELOAD_EVERY:
            return
        with self._lock:
            self._checked = time.monotonic()
            try:
                status = self.path.stat()
                stamp: tuple[int, int] | None = (status.st_mtime_ns, status.st_size)
            except FileNotFoundError:
                stamp = None
            if stamp != self._stamp:
                try:
                    keys = read_keys(self.path) if stamp is not None else []
                except (OSError, ValueError) as error:  # keep the keys it had; say why
                    log.error("ldp-aggregator: the seal key file is unreadable: %s", error)
                    return
                self._keys, self._stamp = keys, stamp
                self._private = {k.key_id: k.private_key for k in keys}


@functools.lru_cache(maxsize=16)
def keyring_at(path: str) -> Keyring:
    """Return the one keyring of this process for a key file."""
    return Keyring(Path(path))


def default_path(database: str, instance_path: str) -> str:
    """Return the key file's default: beside a SQLite file, else in the instance folder."""
    scheme, location = split_url(database)
    if scheme == "sqlite" and location and location != ":memory:":
        return str(Path(location).with_suffix(SUFFIX))
    return os.path.join(instance_path, FILE_NAME)


def keyring_of(config: Mapping[str, Any]) -> Keyring:
    """Return the keyring of the collector's settings (``SEAL_KEYS``, resolved on load)."""
    return keyring_at(str(config["SEAL_KEYS"]))


def seal_fields(keyring: Keyring, task: TaskConfig) -> dict[str, Any]:
    """Return what a sealed task's JSON adds: ``seal``, the current public key (none: {})."""
    current = keyring.current() if task.sealed else None
    return {} if current is None else {"seal": current.to_json()}


def task_etag(keyring: Keyring, task: TaskConfig) -> str:
    """Return a task's ETag: its fingerprint, and for a sealed task the current key id too
    (a rotation must reach devices that revalidate their copy)."""
    current = keyring.current() if task.sealed else None
    return task.fingerprint if current is None else f"{task.fingerprint}.{current.key_id}"


def check_sealable(keyring: Keyring, task: TaskConfig) -> str | None:
    """Return why a new task cannot be sealed here (no key yet), or None."""
    if task.sealed and keyring.current() is None:
        return "a sealed task needs the collector's key: run 'ldp-aggregator keys new' first"
    return None
