"""The argument checker of the documents' not-run commands (tests/doc_args.py) reads shell
lines as a shell would and fails on a flag the real parser does not know."""

from __future__ import annotations

from tests import doc_args


def test_the_argument_checker_reads_shell_lines_and_fails_on_a_wrong_flag() -> None:
    text = (
        "nice -n 19 env A=1 .venv/bin/python -X dev -m benchmarks.client.fork_gate \\\n"
        "    --forks 2 | tee out  # a comment\n"
        "cd x && B=2 time python3 -m benchmarks.client.fork_gate --forkz 2 > log\n"
        ".venv/bin/ldp-aggregator compare crashes --a-where platform=ios\n"
        "ldp-aggregator compare crashes --a-wher platform=ios\n"
        "python -m pip install . ; python -c 'print(1)'; git show x:y > z\n"
        'make demo DEMO_ARGS="--devicez 20000"   # the recipe, with the variable in\n'
        ".venv/bin/python -m simulations sketch_acuracy --seed 7\n"
        "python -m benchmarks.client.fork_gate --help\n"
        "python -m benchmarks.client.fork_gate --fork 2  # argparse would take it\n"
    )
    found = doc_args.checks(
        text, 10, "x.md", {"ldp-aggregator": "ldp_telemetry.aggregator.cli:main"}
    )
    assert [(c.where, c.kind, c.target, c.args) for c in found] == [
        ("x.md:10", "module", "benchmarks.client.fork_gate", ["--forks", "2"]),
        ("x.md:12", "module", "benchmarks.client.fork_gate", ["--forkz", "2"]),
        (
            "x.md:13",
            "script",
            "ldp_telemetry.aggregator.cli:main",
            ["compare", "crashes", "--a-where", "platform=ios"],
        ),
        (
            "x.md:14",
            "script",
            "ldp_telemetry.aggregator.cli:main",
            ["compare", "crashes", "--a-wher", "platform=ios"],
        ),
        ("x.md:15", "python", "print(1)", []),  # tests/doc_names.py: nothing of ours in it
        ("x.md:16", "module", "demo", ["--devicez", "20000"]),
        ("x.md:17", "module", "simulations", ["sketch_acuracy", "--seed", "7"]),
        ("x.md:18", "module", "benchmarks.client.fork_gate", ["--help"]),
        ("x.md:19", "module", "benchmarks.client.fork_gate", ["--fork", "2"]),
    ]
    failures = doc_args.parse_all(found)
    assert [f.split(":", 2)[1] for f in failures] == ["12", "14", "16", "17", "19"], failures
    assert "unrecognized arguments: --forkz" in failures[0]
    assert "No such option '--a-wher'" in failures[1]
    assert "unrecognized arguments: --devicez" in failures[2]
    assert "invalid choice: 'sketch_acuracy'" in failures[3]
    assert "unrecognized arguments: --fork 2" in failures[4]


def test_an_extra_that_pyproject_does_not_declare_fails() -> None:
    text = (
        "pip install . './aggregator[postgres,parquet]'\n"
        ".venv/bin/python -m pip install -e '.[bench]'   # py-spy\n"
        "pip install -e './aggregator[postgress]' requests\n"
    )
    failures = doc_args.missing_extras(text, 5, "x.md")
    assert [f.split(":", 2)[1] for f in failures] == ["6", "7"], failures
    assert "pyproject.toml declares no extra 'bench' (it has ['dev'])" in failures[0]
    assert "aggregator/pyproject.toml declares no extra 'postgress'" in failures[1]


def test_a_python_block_must_match_the_code_it_names() -> None:
    from tests import doc_names

    good = (
        "import numpy as np\n"
        "from ldp_telemetry.shared.mechanisms.numeric import refits\n"
        "refits.BOOTSTRAP, refits.PILED_REFITS = 10, 5\n"
        "print(refits.shape_move(np.ones(2), [np.ones(2)], measure=np.abs), np.mean([1]))\n"
    )
    assert doc_names.problems(good) == []
    bad = (
        "from ldp_telemetry.shared.mechanisms.numeric import refits, refitz\n"
        "import ldp_telemetry.shared.mechanisms.numeric.refits as r\n"
        "r.BOOTSTRAPS = 10\n"
        "refits.shape_move([1], [[1]], measure=abs, measures=abs)\n"
        "refits.shape_move([1])\n"
    )
    assert doc_names.problems(bad) == [
        "ldp_telemetry.shared.mechanisms.numeric has no 'refitz'",
        "ldp_telemetry.shared.mechanisms.numeric.refits has no 'BOOTSTRAPS'",
        "refits.shape_move(...): got an unexpected keyword argument 'measures'",
        "refits.shape_move(...): missing a required argument: 'others'",
    ]
    # a name the code binds again is not the module any more: not looked up
    assert doc_names.problems("import numpy as np\nnp = {}\nnp.anything(1)\n") == []


def test_a_command_quoted_in_prose_fails_only_on_what_does_not_exist() -> None:
    text = (
        "Run `ldp-aggregator backup` (it needs a TARGET) or `ldp-aggregator backup --dbb x y`;\n"
        "```sh\nldp-aggregator backup --dbb x y\n```\n"  # in a fence: not prose
    )
    scripts = {"ldp-aggregator": "ldp_telemetry.aggregator.cli:main"}
    found = doc_args.inline_commands(text, "x.md", scripts)
    assert [(c.where, c.args, c.mention) for c in found] == [
        ("x.md:1", ["backup"], True),
        ("x.md:1", ["backup", "--dbb", "x", "y"], True),
    ]
    failures = doc_args.parse_all(found)
    assert len(failures) == 1 and "No such option '--dbb'" in failures[0], failures
