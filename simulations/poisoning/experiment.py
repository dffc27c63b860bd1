"""Fake devices against every frequency kind: the gain they buy, measured and bounded.

Cao, Jia, Gong, "Data Poisoning Attacks to Local Differential Privacy Protocols" (USENIX
Security 2021): m fake reports among n honest ones (β = m/(n+m)) aimed at r target values
raise the targets' estimated frequencies. Three attacks:

- MGA (maximal gain): each fake report is the one that adds most to the targets' counts
  (grr: a target; olh: the row and bucket where most targets collide; cms: the targets'
  bits set, unpadded, or padded with random bits to an honest weight; hcms: Hadamard
  row 0, where every value's sign is +1);
- RIA (random item): fake devices privatize a random target honestly;
- RPVA (random perturbed value): a report drawn uniformly from the report space.

The measured gain Σ_t (f̂_t after − f̂_t before) is drawn beside the closed form
β·(Φ − f_T) (Φ: the crafted report's total reach over the targets, computed exactly
through the estimator), the closed-form bound per kind (below), and what the collector's checks
see: the share of fake reports refused as implausible and the bit-weight z of the sums.
Real mechanisms (ldp_telemetry.shared.mechanisms) privatize, sum and estimate; nothing is simulated
but the population and the attackers.

Closed-form bounds of Φ (r targets, implemented ε): grr 1 + (d − r)/(e^ε − 1) (plus the
−f_T every kind subtracts); olh 2r·e^ε/(e^ε − 1), reached only if all targets share a
bucket of one row; oue the same 2r·e^ε/(e^ε − 1); ss min(r, ω)·(1 − q)/(p − q);
cms r·(m/(m−1))·(e^{ε/2}/(e^{ε/2} − 1) − 1/m); hcms r·(m/(m−1))·(c_ε − 1/m), c_ε = (e^ε+1)/(e^ε−1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.shared.errors import DecodeError
from ldp_telemetry.shared.mechanisms.poisoning import SUSPECT_Z
from ldp_telemetry.shared.mechanisms.postprocessing import norm_sub
from ldp_telemetry.shared.mechanisms.registry import params_class
from ldp_telemetry.shared.mechanisms.sketches.cms import SketchBatch
from simulations.common import plotting
from simulations.common.population import value_names
from simulations.common.settings import RunSettings
from simulations.common.tables import Column, Table
from simulations.poisoning.fake_reports import CRAFT, RANDOM

NAME = "poisoning"
SUMMARY = (
    "Fake devices: MGA, random-item and random-report attacks on grr, olh, cms, hcms; "
    "measured gain vs the closed form, detection and Cao et al.'s figures"
)


@dataclass(frozen=True)
class Setting:
    """One attacked task: a mechanism's fields and the attack's size."""

    kind: str
    fields: dict[str, Any]
    d: int = 128
    targets: int = 10
    beta: float = 0.05


def settings(epsilon: float, d: int = 128) -> list[Setting]:
    """Return the attacked tasks at one ε (Cao et al.: d = 128, ε = 1, β = 0.05, r = 10)."""
    sketch = {"epsilon": epsilon, "k": 256, "m": 1024, "hash_seed": 11}
    return [
        Setting("grr", {"epsilon": epsilon, "domain": list(value_names("v", d))}, d),
        Setting("olh", {"epsilon": epsilon, "k": 1024, "hash_seed": 11}, d),
        Setting("oue", {"epsilon": epsilon, "domain": list(value_names("v", d))}, d),
        Setting("ss", {"epsilon": epsilon, "domain": list(value_names("v", d))}, d),
        Setting("cms", sketch, d),
        Setting("hcms", sketch, d),
    ]


def run(settings_: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    n = 20_000 if settings_.quick else 200_000
    rng = settings_.rng()
    rows = [attack(s, n, rng) for eps in (1.0, 4.0) for s in settings(eps)]
    buckets = 20_000 if settings_.quick else 1_000_000
    found = detection(10**6, buckets, rng)
    folder = settings_.folder(NAME)
    return [
        plot(rows, folder / f"{NAME}.png"),
        *table(rows).write(folder, NAME),
        *detection_table(found, buckets).write(folder, f"{NAME}_detection"),
        *worth_table(worth()).write(folder, f"{NAME}_worth"),
    ]


def worth() -> list[dict[str, Any]]:
    """Return how many honest devices one fake report is worth, per kind, d and ε."""
    rows = []
    for epsilon in (1.0, 2.0, 4.0):
        row: dict[str, Any] = {"epsilon": epsilon}
        for d in (16, 128, 1024):
            for s in settings(epsilon, d):
                mechanism: Any = params_class(s.kind).from_fields(s.fields).build()
                row[f"{s.kind}_{d}"] = mechanism.reach().high
        rows.append(row)
    return rows


def worth_table(rows: list[dict[str, Any]]) -> Table:
    """Return the reach table: grr by domain size, the others whatever the domain."""
    columns = [Column("epsilon", "ε", "{:g}")]
    columns += [Column(f"grr_{d}", f"grr d = {d:,}", "{:.1f}") for d in (16, 128, 1024)]
    columns += [Column(f"{kind}_128", kind, "{:.2f}") for kind in ("olh", "cms", "hcms")]
    notes = (
        "How many honest devices' worth of count one chosen report adds to a value "
        "(each mechanism's reach().high; cms/hcms m = 1,024; olh, cms, hcms do not depend on d)."
    )
    return Table("Poisoning: honest devices one fake report is worth", columns, rows, notes)


def detection(n: int, buckets: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Return the bit-weight test's false alarms and power in buckets of n honest reports.

    cms m = 1,024, ε = 4. An honest bucket's total weight is drawn exactly:
    Binomial(n, 1 − f) true coordinates plus Binomial(n(m − 1), f) flipped others. Fake
    reports are all ones (unpadded: the band at ingest refuses them, the sums test is the
    second line) or padded to the band's top, the heaviest weight the band lets through.
    """
    mech = params_class("cms").from_fields({"epsilon": 4.0, "k": 256, "m": 1024, "hash_seed": 1})
    cms: Any = mech.build()  # a CountMeanSketch: its flip, m and band
    f, m, band = cms.flip, cms.m, cms.band
    honest = rng.binomial(n, 1 - f, buckets) + rng.binomial(n * (m - 1), f, buckets)
    rows = []
    for fakes, weight, label in (
        (0, 0, "honest"),
        (60, m, "all ones"),
        (250, m, "all ones"),
        (800, band.high, "padded to the band's top"),
    ):
        ones = honest + fakes * weight  # fake reports come on top of the honest ones
        z = (ones - (n + fakes) * band.mean) / np.sqrt((n + fakes) * band.variance)
        rows.append(
            {
                "fakes": fakes,
                "kind": label,
                "flagged": float(np.mean(np.abs(z) > SUSPECT_Z)),
                "mean_z": float(np.mean(z)),
            }
        )
    return rows


def detection_table(rows: list[dict[str, Any]], buckets: int) -> Table:
    """Return the bit-weight test's flag rate per attack size."""
    columns = [
        Column("kind", "fake reports"),
        Column("fakes", "how many", "{:,}"),
        Column("mean_z", "mean z", "{:.2f}"),
        Column("flagged", "buckets flagged", "{:.4%}"),
    ]
    notes = (
        f"{buckets:,} buckets of 10^6 honest cms reports (m = 1,024, ε = 4), flagged when "
        f"|z| > {SUSPECT_Z} (ldp_telemetry.shared.mechanisms.poisoning)."
    )
    return Table("Poisoning: detection by the bit-weight test", columns, rows, notes)


def attack(setting: Setting, n: int, rng: np.random.Generator) -> dict[str, Any]:
    """Run every attack on one setting; return a table row."""
    mechanism: Any = params_class(setting.kind).from_fields(setting.fields).build()
    domain = value_names("v", setting.d)
    weights = 1.0 / np.arange(1, setting.d + 1) ** 1.1  # Zipf(1.1), as Cao et al.'s data
    honest = [domain[i] for i in rng.choice(setting.d, n, p=weights / weights.sum())]
    targets = [domain[i] for i in rng.choice(setting.d, setting.targets, replace=False)]
    fakes = round(setting.beta / (1 - setting.beta) * n)
    base = mechanism.new_sums()
    base.add_many(mechanism.privatize_many(honest, rng))
    before = _shares(mechanism, base, targets)
    f_t = sum(map(honest.count, targets)) / n
    crafted = CRAFT[setting.kind](mechanism, targets, fakes, rng, False)
    reach_sum = _gain_of_one(mechanism, crafted, targets)
    row: dict[str, Any] = {
        "kind": setting.kind,
        "epsilon": setting.fields["epsilon"],
        "per_fake": mechanism.reach().high,
        "closed_form": setting.beta * (reach_sum - f_t),
        "design_bound": setting.beta * (BOUND[setting.kind](mechanism, setting) - f_t),
    }
    attacks: dict[str, Callable[[], Any]] = {
        "mga": lambda: crafted,
        "mga_padded": lambda: CRAFT[setting.kind](mechanism, targets, fakes, rng, True),
        "ria": lambda: mechanism.privatize_many(list(rng.choice(targets, fakes)), rng),
        "rpva": lambda: RANDOM[setting.kind](mechanism, fakes, rng),
    }
    for name, make in attacks.items():
        batch = make()
        sums = base.copy()
        sums.add_many(batch)
        row[name] = float((_shares(mechanism, sums, targets) - before).sum())
        if name == "mga":
            row["mga_norm_sub"] = _normalized(mechanism, sums, domain, targets) - _normalized(
                mechanism, base, domain, targets
            )
        checks = {c.name: c for c in mechanism.check_sums(sums)}
        row[f"{name}_z"] = checks["bit_weight"].z if "bit_weight" in checks else None
        row[f"{name}_refused"] = _refused(mechanism, batch)
    return row


def _shares(mechanism: Any, sums: Any, targets: list[str]) -> np.ndarray:
    return np.asarray(mechanism.estimate(sums, targets).estimate) / sums.total


def _normalized(mechanism: Any, sums: Any, domain: Any, targets: list[str]) -> float:
    """Return the targets' total share after Norm-Sub over the whole domain."""
    counts = norm_sub(mechanism.estimate(sums, list(domain)).estimate, sums.total)
    chosen = np.isin(np.asarray(domain), targets)
    return float(counts[chosen].sum() / sums.total)


def _gain_of_one(mechanism: Any, batch: Any, targets: list[str]) -> float:
    """Return Σ_t φ_t(y) of the batch's first report (estimators are linear)."""
    one = mechanism.new_sums()
    one.add_many(_first(batch))
    return float(np.sum(mechanism.estimate(one, targets).estimate))


def _first(batch: Any) -> Any:
    if isinstance(batch, np.ndarray):
        return batch[:1]
    return type(batch)(*(getattr(batch, f.name)[:1] for f in fields(batch)))


def _refused(mechanism: Any, batch: Any) -> float | None:
    """Return the share of the batch the collector refuses as implausible (None: no check)."""
    reports: list[Any]
    if isinstance(batch, SketchBatch):
        reports = [batch.report(i) for i in range(len(batch))]
    elif mechanism.name == "oue":  # packed bits, one row per report
        reports = [bytes(row) for row in batch]
    else:
        return None
    refused = 0
    for report in reports:
        payload = mechanism.encode_payload(report)
        try:
            mechanism.decode_payload(payload)
        except DecodeError as error:
            refused += error.reason == "implausible_report"
    return refused / len(reports)


# -- the closed-form bounds per kind (f_T subtracted by the caller) -----------------------


def _bound_grr(mech: Any, s: Setting) -> float:
    e = math.exp(mech.effective_epsilon)
    return 1.0 + (s.d - s.targets) / (e - 1.0)


def _bound_olh(mech: Any, s: Setting) -> float:
    e = math.exp(mech.effective_epsilon)
    return 2.0 * s.targets * e / (e - 1.0)


def _bound_ss(mech: Any, s: Setting) -> float:
    return min(s.targets, mech.omega) * (1.0 - mech.q) / (mech.p - mech.q)


def _bound_cms(mech: Any, s: Setting) -> float:
    e = math.exp(mech.effective_epsilon / 2.0)
    return s.targets * (mech.m / (mech.m - 1)) * (e / (e - 1.0) - 1.0 / mech.m)


def _bound_hcms(mech: Any, s: Setting) -> float:
    return s.targets * (mech.m / (mech.m - 1)) * (mech.c_eps - 1.0 / mech.m)


BOUND = {
    "grr": _bound_grr,
    "olh": _bound_olh,
    "oue": _bound_olh,  # the same form: 2r·e^ε/(e^ε − 1)
    "ss": _bound_ss,
    "cms": _bound_cms,
    "hcms": _bound_hcms,
}


def table(rows: list[dict[str, Any]]) -> Table:
    """Return the gains, the closed forms and what detection sees."""
    columns = [
        Column("kind", "kind"),
        Column("epsilon", "ε", "{:g}"),
        Column("per_fake", "honest devices one fake report is worth", "{:.2f}"),
        Column("design_bound", "closed-form bound", "{:.3f}"),
        Column("closed_form", "closed form β(Φ − f_T)", "{:.3f}"),
        Column("mga", "MGA", "{:.3f}"),
        Column("mga_padded", "MGA padded", "{:.3f}"),
        Column("mga_norm_sub", "MGA, Norm-Sub", "{:.3f}"),
        Column("ria", "RIA", "{:.3f}"),
        Column("rpva", "RPVA", "{:.3f}"),
        Column("mga_refused", "MGA refused", "{:.0%}"),
        Column("mga_padded_refused", "padded refused", "{:.0%}"),
        Column("mga_z", "MGA weight z", "{:.1f}"),
        Column("mga_padded_z", "padded weight z", "{:.1f}"),
    ]
    notes = (
        "Frequency gain of 10 targets, d = 128 Zipf(1.1) values, β = 0.05 fake reports; "
        "cms/hcms k = 256, m = 1,024; olh k = 1,024 rows searched for the best collision."
    )
    return Table("Poisoning: gain of fake devices", columns, rows, notes)


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Draw measured gains beside the closed form, per kind and ε."""
    fig, (ax,) = plotting.figure(1, width=9.0, height=4.2)
    labels = [f"{r['kind']}\nε={r['epsilon']:g}" for r in rows]
    x = np.arange(len(rows))
    bars = (("closed_form", "closed form"), ("mga", "MGA"), ("ria", "RIA"), ("rpva", "RPVA"))
    for offset, (key, label) in zip((-0.3, -0.1, 0.1, 0.3), bars, strict=True):
        ax.bar(x + offset, [r[key] for r in rows], width=0.2, label=label)
    ax.set_xticks(x, labels)
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_ylabel("frequency gain of the 10 targets")
    ax.legend()
    return plotting.save(fig, path)
