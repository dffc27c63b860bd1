"""The public surface of shared/ is deliberate: pin ``shared.__all__``."""

from __future__ import annotations

from ldp_telemetry import shared

PUBLIC = [
    "MECHANISMS",
    "CountMeanSketch",
    "CountMeanSketchSums",
    "DecodeError",
    "Envelope",
    "Estimates",
    "GeneralizedRandomizedResponse",
    "GeneralizedRandomizedResponseSums",
    "HadamardBatch",
    "HadamardCountMeanSketch",
    "HadamardCountMeanSketchSums",
    "HadamardReport",
    "HashedBatch",
    "HashedReport",
    "LdpError",
    "Mechanism",
    "OptimizedLocalHashing",
    "ParameterError",
    "RandomizedResponse",
    "RandomizedResponseSums",
    "Rejection",
    "SketchBatch",
    "SketchReport",
    "Sums",
    "TaskConfig",
    "ValueOutOfDomain",
    "decode_batch",
    "decode_report",
    "encode_batch",
    "encode_report",
    "new_report_id",
]


def test_all_is_pinned() -> None:
    assert sorted(shared.__all__) == sorted(PUBLIC)
    assert len(set(shared.__all__)) == len(shared.__all__)


def test_every_public_name_exists_and_is_documented() -> None:
    for name in shared.__all__:
        obj = getattr(shared, name)
        if callable(obj) and name not in ("Mechanism",):
            assert obj.__doc__, f"shared.{name} has no docstring"


def test_errors_share_one_root_and_are_value_errors() -> None:
    for error in (shared.ParameterError, shared.ValueOutOfDomain, shared.DecodeError):
        assert issubclass(error, shared.LdpError) and issubclass(error, ValueError)
    assert shared.DecodeError("x").reason == "invalid_message"
    assert shared.MECHANISMS == ("rr", "grr", "cms", "hcms", "olh", "hh", "numeric", "oue", "ss")
