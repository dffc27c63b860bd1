"""ldp-aggregator estimates --group-by/--where and compare: the HTTP answers, offline."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from ldp_telemetry.aggregator.cli import main
from tests.aggregator.breakdowns.uploads import PLATFORM, ask, create, envelopes, upload
from tests.support.collectors import make_app


def run(db: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--db", str(db), *args])
    return result.exit_code, result.output


def test_the_command_line_answers_as_the_api(tmp_path: Path) -> None:
    db = tmp_path / "cli.sqlite3"
    client = make_app(str(db)).test_client()
    task = create(
        client, task_id="colours", mechanism="grr", epsilon=2.0, domain=["red", "blue"],
        dimensions=[PLATFORM],
    )  # fmt: skip
    rng, sent = np.random.default_rng(3), []
    for platform, share in (("android", 0.8), ("ios", 0.3), ("web", 0.5)):
        values = [
            "red" if r < share else "blue" for r in rng.random(600 if platform != "web" else 30)
        ]
        sent += envelopes(task, values, rng, {"platform": platform})
    upload(client, task, sent)

    code, out = run(db, "estimates", "colours", "--group-by", "platform", "--format", "json")
    assert code == 0, out
    assert json.loads(out) == ask(client, "colours", group_by=["platform"]).get_json()
    code, out = run(db, "estimates", "colours", "--group-by", "platform")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["slice", "value"]
    assert [line.split()[0] for line in lines[1:]] == ["all"] * 2 + ["platform=android"] * 2 + [
        "platform=ios"
    ] * 2
    # web (30) is thin: it joins the largest row (android and ios tie at 600: the first).
    assert all("platform=android +1 rolled up" in line for line in lines[3:5])
    code, out = run(db, "estimates", "colours", "--where", "platform=linux")
    assert code != 0 and "must be one of ['android', 'ios', 'web'] or 'other'" in out
    code, out = run(db, "estimates", "colours", "--where", "platform")
    assert code != 0 and "NAME=VALUE" in out

    sides = {"a": {"where": {"platform": "android"}}, "b": {"where": {"platform": "ios"}}}
    code, out = run(
        db, "compare", "colours", "--a-where", "platform=android", "--b-where", "platform=ios",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, out
    assert json.loads(out) == ask(client, "colours", "compare", **sides).get_json()
    code, out = run(
        db, "compare", "colours", "--a-where", "platform=android", "--b-where", "platform=ios"
    )
    assert code == 0 and "significant after Holm" in out.splitlines()[0]
    code, out = run(
        db, "compare", "colours", "--a-where", "platform=web", "--b-where", "platform=ios"
    )
    assert code != 0 and "min_slice_size" in out
