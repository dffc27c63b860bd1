"""The READMEs' shell and Python blocks run as written, in order, like one user's terminal.

Each Markdown file below is a session: its ``sh``/``bash``/``python`` blocks run one after
another in a fresh working folder (with ``.venv`` linked to this checkout's), environment
variables and the current folder carried from block to block. A comment line right before
a block changes how it runs:

- ``<!-- docs-test: background -->``: started in the background (e.g. ``serve``); the
  session waits until the port it names answers ``/healthz`` and stops it (by process
  group) when the file is done.
- ``<!-- docs-test: not run: REASON -->``: too long, recursive (``make test`` inside
  ``make test``) or aimed at a server that is not there. Every command in it must still
  exist: each ``make`` target is dry-run, each program must be found, Python must compile
  and its imports resolve, JavaScript must parse (``node --check``), and the arguments of
  each command that starts this checkout's Python code are parsed by its real parser
  (tests/doc_args.py: a renamed flag fails).

``js`` blocks run as ES modules in node, where ``import ... from "ldp-telemetry"`` is the
TypeScript SDK of this checkout (sdk-js/, built once per run, as tests/sdk_js builds it).

Port 8000 in the documents is replaced by a free port, so the suite never needs a fixed
one (and 8100, a shuffler's, by another). Blocks without a language (sample output) are not run.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import doc_args
from tests.sdk_js.helpers import build as build_sdk_js
from tests.support.servers import free_port
from tests.support.workers import build_once

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    "README.md",
    "aggregator/README.md",
    "client/README.md",
    "sdk-js/README.md",
    "sdk-java/README.md",
    "simulations/README.md",
    "benchmarks/README.md",
    "PROTOCOL.md",
    "docs/demo.md",
    "docs/privacy.md",
    "docs/mechanisms.md",
    "docs/numeric.md",
    "docs/heavy-hitters.md",
    "docs/shuffling.md",
    "docs/fake-devices.md",
    "docs/breakdowns.md",
    "docs/dashboard.md",
    "docs/performance.md",
    "docs/operations.md",
]
# Pages without commands to run: their links are checked all the same.
LINKED_ONLY = ["docs/design.md", "docs/architecture.md"]
FENCE = re.compile(r"^```(\w*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*(background|not run:\s*(.+?))\s*-->$")
RUNNABLE = {"sh", "bash", "shell", "python", "js"}
SDK_JS = ROOT / "sdk-js"
SHELL_BUILTINS = {"export", "cd", "unset", "source", "."}
BLOCK_TIMEOUT = 240  # seconds; the slowest block (a quick simulation) takes a few


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, text, first line number and directive."""

    language: str
    text: str
    line: int
    mode: str  # "run", "background" or "not run"
    reason: str = ""


def blocks(path: Path) -> list[Block]:
    """Return the runnable blocks of a Markdown file, in order."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i, directive = 0, None
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            stripped = lines[i].strip()
            if stripped:
                directive = DIRECTIVE.match(stripped)
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        language = fence.group(1)
        if language in RUNNABLE:
            mode, reason = "run", ""
            if directive is not None:
                mode = "background" if directive.group(1) == "background" else "not run"
                reason = directive.group(2) or ""
            found.append(Block(language, "\n".join(lines[i + 1 : end]) + "\n", i + 1, mode, reason))
        i, directive = end + 1, None
    return found


def existing_docs() -> list[str]:
    return [doc for doc in DOCS if (ROOT / doc).exists()]


class Session:
    """A terminal: a working folder, an environment, and what runs in the background."""

    def __init__(self, folder: Path, port: int) -> None:
        self.folder, self.port = folder, port
        self.shuffler_port = free_port()  # 8100 in the docs: a shuffler in front of 8000
        (folder / ".venv").symlink_to(ROOT / ".venv")
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("LDP_", "PROMETHEUS_", "PYTEST_", "PYTHONPATH"))
        }
        self.env["PATH"] = f"{Path(sys.executable).parent}:{self.env.get('PATH', '')}"
        # The documents' commands run from the checkout (simulations/, benchmarks/, demo/ and
        # protocol/ are not installed): the session works in its own folder, so the checkout
        # is put on the path as the current folder would be.
        self.env["PYTHONPATH"] = str(ROOT)
        self.state = folder / ".docs-test-state"
        self.background: list[subprocess.Popen[bytes]] = []

    def prepare(self, text: str) -> str:
        text = re.sub(r"\b8100\b", str(self.shuffler_port), text)
        return re.sub(r"\b8000\b", str(self.port), text)

    def run(self, block: Block, where: str) -> None:
        text = self.prepare(block.text)
        if block.language == "python":
            script = self.folder / ".docs-test-block.py"
            script.write_text(text)
            command = [str(ROOT / ".venv" / "bin" / "python"), str(script)]
        elif block.language == "js":
            command = ["node", str(self.node_script(text))]
        else:
            # Restore the shell variables of the blocks before (a terminal keeps them, exported
            # or not), run, then save variables, environment and folder for the next block.
            command = [
                "bash",
                "-euo",
                "pipefail",
                "-c",
                f"{self.restore()}{text}\n{{ declare -p > {self.state}.vars; "
                f"env -0 > {self.state}.env; pwd > {self.state}.pwd; }}",
            ]
        # Its own process group, so that a block that hangs is stopped with all it started.
        process = subprocess.Popen(
            command,
            cwd=self.cwd(),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate(timeout=30)
            pytest.fail(f"{where} ran over {BLOCK_TIMEOUT} s:\n{text}\n{output.decode()}")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # nothing it started lives on
        assert process.returncode == 0, (
            f"{where} failed ({process.returncode}):\n{text}\n{output.decode(errors='replace')}"
        )
        if block.language not in ("python", "js"):
            self.load_state()

    def node_script(self, text: str) -> Path:
        """Write a js block as a module that imports this checkout's sdk-js as ldp-telemetry."""
        build_once("sdk-js", build_sdk_js)  # the sdk fixture's build, if it ran first
        link = self.folder / "node_modules" / "ldp-telemetry"
        if not link.exists():
            link.parent.mkdir(exist_ok=True)
            link.symlink_to(SDK_JS)
        script = self.folder / ".docs-test-block.mjs"
        script.write_text(text)
        return script

    def restore(self) -> str:
        saved = Path(f"{self.state}.vars")
        if not saved.exists():
            return ""
        # Plain variables only: bash's own (readonly, BASH*, PWD...) are not re-declared.
        own = re.compile(
            r"^declare -[-a-zA-Z]*[rAa]|^declare -\S+ (BASH\w*|[A-Z]*(PID|UID)|"
            r"SHELLOPTS|FUNCNAME|GROUPS|DIRSTACK|PIPESTATUS|_|OPTIND|LINENO|"
            r"SECONDS|RANDOM|SRANDOM|HISTCMD|EPOCH\w+|COLUMNS|LINES|OLDPWD|PWD|"
            r"SHLVL|OPTERR|IFS|PS\d|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|"
            r"COMP_WORDBREAKS)="
        )
        keep = [line for line in saved.read_text().splitlines() if not own.match(line)]
        return "\n".join(keep) + "\n"

    def cwd(self) -> Path:
        saved = Path(f"{self.state}.pwd")
        return Path(saved.read_text().strip()) if saved.exists() else self.folder

    def load_state(self) -> None:
        pairs = Path(f"{self.state}.env").read_bytes().split(b"\0")
        self.env = dict(p.decode().split("=", 1) for p in pairs if b"=" in p)

    def start(self, block: Block, where: str) -> None:
        text = self.prepare(block.text)
        log = self.folder / f".docs-test-background-{len(self.background)}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                ["bash", "-euo", "pipefail", "-c", text],
                cwd=self.cwd(),
                env=self.env,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        self.background.append(process)
        port = self.shuffler_port if re.search(r"\b8100\b", block.text) else self.port
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"{where} exited ({process.returncode}):\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        pytest.fail(f"{where}: nothing answered on port {port} in 60 s:\n{log.read_text()}")

    def stop(self) -> None:
        for process in self.background:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)


def check_not_run(block: Block, where: str, path: str) -> None:
    """A block the suite does not run still names only commands and targets that exist."""
    assert block.reason, f"{where}: say why it is not run"
    if block.language == "python":  # it compiles and its imports exist
        tree = ast.parse(block.text, where)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                for name in names:
                    assert importlib.util.find_spec(name.split(".")[0]), f"{where}: {name}"
        return
    if block.language == "js":  # it parses as a module
        checked = subprocess.run(
            ["node", "--input-type=module", "--check"],
            input=block.text,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert checked.returncode == 0, f"{where}: {checked.stderr}"
        return
    for line in block.text.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] == "make":
            targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
            dry = subprocess.run(
                ["make", "-n", *targets],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert dry.returncode == 0, f"{where}: {line!r} has no target:\n{dry.stderr}"
        elif words[0] in ("python", "python3"):
            module = words[2] if words[1:2] == ["-m"] else None
            assert (
                module is None
                or (ROOT / module.replace(".", "/")).exists()
                or (ROOT / (module.replace(".", "/") + ".py")).exists()
            ), f"{where}: {line!r}"
        elif words[0] not in SHELL_BUILTINS:
            program = words[0]
            assert (ROOT / program).exists() or shutil.which(program, path=path), (
                f"{where}: {program!r} not found"
            )


@pytest.mark.parametrize("doc", existing_docs())
def test_the_documented_commands_run(doc: str, tmp_path: Path) -> None:
    assert shutil.which("curl"), "the READMEs use curl: make test installs it (apt-get)"
    session = Session(tmp_path, free_port())
    try:
        for block in blocks(ROOT / doc):
            where = f"{doc}:{block.line}"
            if block.mode == "not run":
                check_not_run(block, where, session.env["PATH"])
            elif block.mode == "background":
                session.start(block, where)
            else:
                session.run(block, where)
    finally:
        session.stop()


def test_the_block_reader_sees_directives_and_languages(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n<!-- docs-test: background -->\n```sh\nserve\n```\n\n```\nout\n"
        "```\n<!-- docs-test: not run: slow -->\n\n```python\nprint(1)\n```\n"
        "```sh\necho hi\n```\n"
    )
    found = blocks(doc)
    assert [(b.language, b.mode, b.reason, b.text) for b in found] == [
        ("sh", "background", "", "serve\n"),
        ("python", "not run", "slow", "print(1)\n"),
        ("sh", "run", "", "echo hi\n"),
    ]


SHELLS = ("sh", "bash", "shell")


def test_the_not_run_commands_arguments_parse() -> None:
    """Every not-run command that starts this checkout's Python code parses its arguments
    with the real parser, the flags of the commands quoted in prose exist, and what a
    not-run Python block takes from the code exists (tests/doc_args.py, doc_names.py): all
    in one subprocess, imports shared."""
    scripts = doc_args.console_scripts()
    assert "ldp-aggregator" in scripts  # the collector's CLI is installed (make test does)
    found: list[doc_args.Check] = []
    failures: list[str] = []
    for doc in existing_docs():
        for block in blocks(ROOT / doc):
            if block.mode != "not run":
                continue  # run: the test above runs it
            if block.language in SHELLS:
                found += doc_args.checks(block.text, block.line + 1, doc, scripts)
                failures += doc_args.missing_extras(block.text, block.line + 1, doc)
            elif block.language == "python":
                found.append(doc_args.python_block(block.text, block.line + 1, doc))
    assert len(found) >= 50, found  # 100 today, most from simulations/ and benchmarks/
    for doc in [*existing_docs(), *LINKED_ONLY]:  # and `python -m ... --flag` in sentences
        found += doc_args.inline_commands((ROOT / doc).read_text(encoding="utf-8"), doc, scripts)
    failures += doc_args.parse_all(found)
    assert not failures, "\n\n".join(failures)
