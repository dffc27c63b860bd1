"""Pure mathematics and wire format shared by the client SDK and the aggregator.

No IO, threads, Flask or HTTP here: only parameters, hashing, the four local-DP
mechanisms (privatize / aggregate / estimate), closed-form accuracy and the codec.
"""

from shared.cms import CountMeanSketch, CountMeanSketchSums, SketchBatch, SketchReport
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
from shared.grr import GeneralizedRandomizedResponse, GeneralizedRandomizedResponseSums
from shared.hcms import (
                          HadamardBatch,
                          HadamardCountMeanSketch,
                          HadamardCountMeanSketchSums,
                          HadamardReport,
)
from shared.rr import RandomizedResponse, RandomizedResponseSums
from shared.sums import Sums
from shared.task import MECHANISMS, Mechanism, TaskConfig

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
    "LdpError",
    "Mechanism",
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
