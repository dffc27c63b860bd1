"""What one report reveals, whatever the mechanism: the Bayes reading of epsilon.

Each mechanism's ``Plan.attack_success`` is the chance that a Bayes adversary with a
uniform prior over d values names a device's value from one report (its closed form is in
the mechanism's module; docs/design.md, Attackability, after ldp-toolbox, Arcolezi et
al., PVLDB 2023). Here: the lift of that chance over a blind guess, and the bound any
ε-LDP report puts on an adversary's posterior.
"""

from __future__ import annotations

import math


def lift(attack_success: float, domain_size: int) -> float:
    """Return the attack's success over a blind guess's 1/d."""
    return attack_success * domain_size


def posterior_bound(prior: float, epsilon: float) -> float:
    """Return πe^ε/(πe^ε + 1 − π): the most an ε-LDP report can raise a prior π on a value.

    Any report is at most e^ε times likelier under the value than under any other, so the
    posterior odds are at most e^ε times the prior odds; the bound is attained when the
    prior's remaining 1 − π sits on one other value and the report is the one that
    favours the value most (e.g. grr reporting the value).
    """
    scaled = prior * math.exp(epsilon)
    return scaled / (scaled + 1.0 - prior)
