"""Pure mathematics and wire format shared by the client SDK and the aggregator.

No IO, threads, Flask or HTTP here: only parameters, hashing, the local-DP mechanisms (privatize /
aggregate / estimate; :mod:`ldp_telemetry.shared.mechanisms` and its registry), closed-form accuracy
and the codec.
"""

from ldp_telemetry.shared.codec import (
    Envelope,
    Rejection,
    decode_batch,
    decode_report,
    encode_batch,
    encode_report,
    new_report_id,
)
from ldp_telemetry.shared.errors import DecodeError, LdpError, ParameterError, ValueOutOfDomain
from ldp_telemetry.shared.estimates import Estimates
from ldp_telemetry.shared.mechanisms.base import Mechanism
from ldp_telemetry.shared.mechanisms.grr import (
    GeneralizedRandomizedResponse,
    GeneralizedRandomizedResponseSums,
)
from ldp_telemetry.shared.mechanisms.olh import HashedBatch, HashedReport, OptimizedLocalHashing
from ldp_telemetry.shared.mechanisms.registry import MECHANISMS
from ldp_telemetry.shared.mechanisms.rr import RandomizedResponse, RandomizedResponseSums
from ldp_telemetry.shared.mechanisms.sketches.cms import (
    CountMeanSketch,
    CountMeanSketchSums,
    SketchBatch,
    SketchReport,
)
from ldp_telemetry.shared.mechanisms.sketches.hcms import (
    HadamardBatch,
    HadamardCountMeanSketch,
    HadamardCountMeanSketchSums,
    HadamardReport,
)
from ldp_telemetry.shared.sums import Sums
from ldp_telemetry.shared.task import TaskConfig

__all__ = [
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
