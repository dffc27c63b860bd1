"""The arguments of the documents' not-run commands, parsed by the commands' real parsers.

tests/test_docs.py runs most of the documents' blocks; those marked ``not run`` (minutes of
simulation, a benchmark, a server that is not there) are only checked for existence there.
Here each command of such a block that starts this checkout's Python code (``python -m
MODULE ARGS``, a console script such as ``ldp-aggregator ARGS``, the ``python -m`` lines of
``make -n TARGET [VAR=...]``) has its ARGS parsed by its own argparse or click parser, in one
subprocess that stops each right after the parse: nothing is run, but a renamed flag, a
missing required option or a bad choice fails with the parser's message. Also: ``python -c``
code and Python blocks (tests/doc_names.py), ``pip install .[extra]``, commands in prose.

Run as ``python -m tests.doc_args FILE``, FILE a JSON list of checks; it writes the failures
back into FILE.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import re
import runpy
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OPERATORS = {"&&", "||", "|", ";", "&", "|&"}
REDIRECTIONS = {">", ">>", "<", ">&", "&>", "&>>"}
PREFIXES = {"time", "nohup", "exec", "command"}
PYTHONS = {"python", "python3"}
EXTRAS = re.compile(r"^(\.[^\[]*)\[([^\]]+)\]$")  # ./aggregator[postgres,parquet]


@dataclass(frozen=True)
class Check:
    """One command whose arguments are to be parsed: where it is written, and what it runs."""

    where: str  # file:line
    line: str  # as written (for the message)
    kind: str  # "module" (python -m), "script" (a console script's entry point) or "python"
    target: str  # the module, the entry point "package.module:attribute", or Python code
    prog: str
    args: list[str]
    mention: bool = False  # quoted in prose: only UNKNOWN flags, subcommands, choices fail


def commands(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """Yield (line index, line as written, words) for each simple command of a shell text.

    Continuation lines (``\\``) are joined, comments dropped, ``&&``, ``|``, ``;`` split
    commands, redirections are left out, and what only prefixes a command (``A=B``,
    ``env A=B``, ``nice -n 19``, ``time``) is taken off.
    """
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start, line = i, lines[i]
        while line.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i]
        i += 1
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, "#"
        try:
            tokens = list(lexer)
        except ValueError:  # unbalanced quotes: not a command line (make -n prints recipes)
            continue
        words: list[str] = []
        for token in [*tokens, ";"]:
            if token in OPERATORS:
                if stripped := strip_prefixes(words):
                    yield start, line.strip(), stripped
                words = []
            else:
                words.append(token)


def strip_prefixes(words: list[str]) -> list[str]:
    """The command itself, without its redirections, assignments and wrapping programs."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in REDIRECTIONS:
            skip = True  # and its file
        else:
            kept.append(word)
    while kept:
        head = kept[0]
        if "=" in head and not head.startswith("-") and head.split("=")[0].isidentifier():
            kept = kept[1:]
        elif head == "env":
            kept = kept[1:]
            while kept and (kept[0].startswith("-") or "=" in kept[0]):
                kept = kept[1:]
        elif head == "nice":
            kept = kept[1:]
            if kept[:1] == ["-n"]:
                kept = kept[2:]
            elif kept and kept[0].startswith("-"):
                kept = kept[1:]
        elif head in PREFIXES:
            kept = kept[1:]
        else:
            break
    return kept


def console_scripts() -> dict[str, str]:
    """This project's console scripts (name -> "module:attribute"), as installed."""
    return {
        ep.name: ep.value
        for ep in entry_points(group="console_scripts")
        if ep.value.startswith("ldp_telemetry")
    }


def ours(module: str) -> bool:
    """Whether a module is this project's: a checkout folder or the ldp_telemetry namespace."""
    path = ROOT / module.replace(".", "/")
    return module.startswith("ldp_telemetry") or path.is_dir() or path.with_suffix(".py").exists()


def check_of(where: str, line: str, words: list[str], scripts: dict[str, str]) -> Check | None:
    """The check for one command, or None when it does not start this project's Python code."""
    program = Path(words[0]).name
    if program in scripts:
        return Check(where, line, "script", scripts[program], program, words[1:])
    if program not in PYTHONS and not (
        program.startswith("python3.") and program[len("python") :].replace(".", "").isdigit()
    ):
        return None
    rest = words[1:]
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        rest = rest[2:] if rest[0] in ("-X", "-W") else rest[1:]  # the interpreter's options
    if rest[:1] == ["-c"] and len(rest) > 1:  # what the code takes from this checkout
        return Check(where, line, "python", rest[1], "python -c", [])
    if len(rest) < 2 or rest[0] != "-m" or not ours(rest[1]):
        return None  # a script, pip, pytest: not this check's
    return Check(where, line, "module", rest[1], f"python -m {rest[1]}", rest[2:])


def checks(text: str, first_line: int, doc: str, scripts: dict[str, str]) -> list[Check]:
    """The checks of one not-run shell block whose first line is ``first_line`` of ``doc``."""
    found = []
    for index, line, words in commands(text):
        where = f"{doc}:{first_line + index}"
        if words[0] == "make":  # what the recipe would run, with VAR=... in
            dry = subprocess.run(
                ["make", "-n", *words[1:]],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            for _, _, recipe in commands(dry.stdout):
                if (check := check_of(where, line, recipe, scripts)) is not None:
                    found.append(check)
        elif (check := check_of(where, line, words, scripts)) is not None:
            found.append(check)
    return found


def inline_commands(text: str, doc: str, scripts: dict[str, str]) -> list[Check]:
    """The checks of the commands quoted in a document's prose (`python -m ...` outside fences).

    Prose often names a command without what it requires (`ldp-aggregator backup`), so only
    UNKNOWN failures count for these (``mention``): a flag, subcommand or choice not there."""
    found, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            for span in re.findall(r"`([^`]+)`", line):
                if re.match(r"(\S*/)?(python3?|ldp-aggregator|make|nice)\b", span):
                    found += [replace(c, mention=True) for c in checks(span, number, doc, scripts)]
    return found


UNKNOWN = ("unrecognized arguments", "No such option", "invalid choice", "No such command")


def python_block(text: str, first_line: int, doc: str) -> Check:
    """The check of a not-run Python block: what it takes from this checkout exists."""
    return Check(f"{doc}:{first_line}", "(the Python block)", "python", text, "python", [])


def missing_extras(text: str, first_line: int, doc: str) -> list[str]:
    """``pip install PATH[extra,...]`` with PATH in this checkout: each extra is one that
    PATH's pyproject.toml declares (pip only warns about an unknown one, and installs less)."""
    failures = []
    for index, line, words in commands(text):
        if not (Path(words[0]).name.startswith("pip") or words[1:3] == ["-m", "pip"]):
            continue
        for word in words:
            if (named := EXTRAS.match(word)) is None:
                continue
            project = ROOT / named.group(1) / "pyproject.toml"
            declared = extras_of(project)
            for extra in named.group(2).split(","):
                if extra.strip() not in declared:
                    failures.append(
                        f"{doc}:{first_line + index}: {line!r}: {project.relative_to(ROOT)} "
                        f"declares no extra {extra.strip()!r} (it has {sorted(declared)})"
                    )
    return failures


def extras_of(project: Path) -> set[str]:
    """The extras a pyproject.toml declares (its [project.optional-dependencies] keys)."""
    if not project.exists():
        return set()
    section = project.read_text(encoding="utf-8").split("[project.optional-dependencies]")
    if len(section) < 2:
        return set()
    table = re.split(r"^\[", section[1], maxsplit=1, flags=re.MULTILINE)[0]
    return set(re.findall(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*=", table, flags=re.MULTILINE))


def parse_all(found: list[Check], timeout: float = 240) -> list[str]:
    """Parse every check's arguments in one subprocess; return the failures' messages."""
    if not found:
        return []
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LDP_", "PROMETHEUS_", "PYTEST_", "PYTHONPATH"))
    }
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory() as folder:
        exchange = Path(folder) / "checks.json"
        exchange.write_text(json.dumps([asdict(c) for c in found]))
        done = subprocess.run(
            [sys.executable, "-m", "tests.doc_args", str(exchange)],
            cwd=folder,  # were a command to run after all, it would write here, not in the checkout
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"the argument checker failed:\n{done.stderr}"
        failures: list[str] = json.loads(exchange.read_text())
    return failures


# What follows runs in the subprocess.


class Parsed(BaseException):
    """Raised once the command's outermost parse succeeded: it stops the command there.

    A BaseException, so that the command's own ``except Exception`` does not catch it."""


class ParserExit(BaseException):
    """The parser itself exited: 2 on an error, 0 after --help. (A SystemExit from anywhere
    else, a command that exits 0 without parsing, is not taken for a parse.)"""

    def __init__(self, code: object) -> None:
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def stop_after_parsing() -> Iterator[None]:
    """Make argparse and click stop the program right after a successful parse."""
    import click  # the collector's CLI

    depth = [0]

    def stopping(original: Callable[..., Any]) -> Callable[..., Any]:
        def parse(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
            # flags spelled in full: an abbreviation argparse takes today (--fork for
            # --forks) is an error once another flag starts the same way
            self.allow_abbrev = False
            depth[0] += 1  # a subcommand's parser runs inside its parent's parse
            try:
                result = original(self, *args, **kwargs)
            except SystemExit as exit:  # an error (2) or --help (0): the parser's own exit
                raise ParserExit(exit.code) from None
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                if isinstance(result, tuple) and result[1]:  # parse_known_args' leftovers
                    self.error(f"unrecognized arguments: {' '.join(result[1])}")
                raise Parsed
            return result

        return parse

    def click_main(
        self: click.Command, args: list[str] | None = None, prog_name: str | None = None, **_: Any
    ) -> Any:
        words = list(sys.argv[1:] if args is None else args)
        ctx = self.make_context(prog_name or Path(sys.argv[0]).name, words)
        while isinstance(ctx.command, click.Group):
            # click 8.2 renamed protected_args (a deprecated property since)
            protected = (
                ctx._protected_args if hasattr(ctx, "_protected_args") else ctx.protected_args
            )
            rest = [*protected, *ctx.args]
            if not rest:
                break
            name, command, rest = ctx.command.resolve_command(ctx, rest)
            assert command is not None and name is not None
            ctx = command.make_context(name, rest, parent=ctx)
        raise Parsed

    names = ("parse_args", "parse_known_args", "parse_intermixed_args")
    saved = {name: getattr(argparse.ArgumentParser, name) for name in names}
    # where main is defined: click.Command (BaseCommand before click 8.2)
    owner = next(c for c in click.Command.__mro__ if "main" in vars(c))
    saved_main = vars(owner)["main"]
    try:
        for name in names:
            setattr(argparse.ArgumentParser, name, stopping(saved[name]))
        setattr(owner, "main", click_main)  # noqa: B010 - a stand-in, restored below
        yield
    finally:
        for name in names:
            setattr(argparse.ArgumentParser, name, saved[name])
        setattr(owner, "main", saved_main)  # noqa: B010


def parse_one(check: Check) -> str | None:
    """Parse one command's arguments; None when they parse, else why not."""
    import click

    if check.kind == "python":  # tests/doc_names.py: names, attributes and calls
        from tests import doc_names

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            found = doc_names.problems(check.target)
        return "\n".join(found) or None
    sys.argv = [check.prog, *check.args]
    out = io.StringIO()
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(out),
            stop_after_parsing(),
        ):
            if check.kind == "module":
                runpy.run_module(check.target, run_name="__main__", alter_sys=True)
            else:
                module, attribute = check.target.split(":")
                getattr(importlib.import_module(module), attribute)()
    except Parsed:
        return None
    except ParserExit as exit:  # argparse's error (2) or --help (0)
        if exit.code in (0, None):
            return None
        return out.getvalue().strip() or f"exit {exit.code}"
    except SystemExit as exit:
        return f"it exited ({exit.code}) before its arguments were parsed\n{out.getvalue()}"
    except click.exceptions.Exit as exit:  # click's --help
        return None if exit.exit_code == 0 else f"exit {exit.exit_code}"
    except click.ClickException as error:
        context = getattr(error, "ctx", None)
        usage = context.get_usage() + "\n" if context is not None else ""
        return f"{usage}Error: {error.format_message()}"
    except Exception as error:  # reported with the command that raised it
        return f"{type(error).__name__}: {error}\n{out.getvalue().strip()}"
    return "it ran to the end without parsing its arguments (nothing checked them)"


def main() -> None:
    exchange = Path(sys.argv[1])
    failures = []
    for item in json.loads(exchange.read_text()):
        check = Check(**item)
        started = time.monotonic()
        problem = parse_one(check)
        took = time.monotonic() - started
        print(f"{took:6.2f} s  {check.where}  {check.line}", file=sys.__stderr__)
        if problem is not None and (not check.mention or any(u in problem for u in UNKNOWN)):
            verb = "does not match the code" if check.kind == "python" else "does not parse"
            failures.append(f"{check.where}: {check.line!r} {verb}:\n{problem}")
    exchange.write_text(json.dumps(failures))


if __name__ == "__main__":
    main()
