"""Pure mathematics and wire format shared by the client SDK and the aggregator.

No IO, threads, Flask or HTTP here: only parameters, hashing, the local-DP mechanisms
(privatize / aggregate / estimate; :mod:`shared.mechanisms` and its registry), closed-form
accuracy and the codec.
"""

from shared.codec import (
    Envelope,
    Rejection,
    decode_batch,
    decode_report,
    encode_batch,
    encode_report,
    new_report_id,
)
from shared.errors import DecodeError, LdpError, ParameterError, ValueOutOfDomain
from shared.estimates import Estimates
from shared.mechanisms.base import Mechanism
from shared.mechanisms.cms import CountMeanSketch, CountMeanSketchSums, SketchBatch, SketchReport
from shared.mechanisms.grr import GeneralizedRandomizedResponse, GeneralizedRandomizedResponseSums
from shared.mechanisms.hcms import (
    HadamardBatch,
    HadamardCountMeanSketch,
    HadamardCountMeanSketchSums,
    HadamardReport,
)
from shared.mechanisms.olh import HashedBatch, HashedReport, OptimizedLocalHashing
from shared.mechanisms.registry import MECHANISMS
from shared.mechanisms.rr import RandomizedResponse, RandomizedResponseSums
from shared.sums import Sums
from shared.task import TaskConfig

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
