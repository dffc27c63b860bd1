"""Quick end-to-end pass through shared/: privatize, aggregate, estimate, encode."""

import json
import math

import numpy as np

from ldp_telemetry.shared import (
    CountMeanSketch,
    RandomizedResponse,
    TaskConfig,
    decode_batch,
    encode_batch,
)
from ldp_telemetry.shared.codec import Envelope, new_report_id


def test_seed_numbers_rr() -> None:
    rr = RandomizedResponse(alpha=0.5, beta=0.5)
    assert rr.effective_epsilon == math.log(3)
    sums = rr.new_sums()
    sums.add_many(np.array([1] * 400 + [0] * 600))
    assert rr.estimate(sums).proportions().estimate[0] == 0.3


def test_cms_batch_round_trip() -> None:
    task = TaskConfig.create(task_id="smoke", mechanism="cms", epsilon=4.0, k=8, m=20)
    cms = task.mechanism_object
    assert isinstance(cms, CountMeanSketch)
    report = cms.privatize("hello", np.random.default_rng(0))
    envelope = Envelope(new_report_id(), task.fingerprint, task.floor_time(1e9), report)
    accepted, rejected = decode_batch(task, json.loads(encode_batch(task, [envelope])))
    assert accepted == [envelope] and rejected == []
