"""The parameters of an hh task: defaults for a new task, validation, and the mechanism.

A new task's step defaults to 2, or to 1 when the default search would not fit
(:meth:`LevelSearch.default_step`); a new task whose default heavy-hitters query could
not run is refused with the fix, so every task the collector accepts can be searched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ldp_telemetry.shared.errors import ParameterError, ValueOutOfDomain
from ldp_telemetry.shared.mechanisms.base import Option, ParamsBase, as_float
from ldp_telemetry.shared.mechanisms.hh.mechanism import HeavyHitters
from ldp_telemetry.shared.mechanisms.hh.reports import BYTES, UTF8_BYTES
from ldp_telemetry.shared.mechanisms.hh.search import DEFAULT_SURVIVORS, LevelSearch
from ldp_telemetry.shared.mechanisms.sketches.base import SketchParams, with_hash_seed


@dataclass(frozen=True)
class HeavyHitterParams(ParamsBase):
    """hh: the CMS parameters per level, the alphabet, L, L0 and the step."""

    epsilon: float | None = None
    k: int | None = None
    m: int | None = None
    hash_seed: int | None = None
    alphabet: str | None = None
    max_length: int | None = None
    first: int | None = None
    step: int | None = None

    name = "hh"
    options = (
        *SketchParams.options,
        Option(
            "alphabet",
            "string",
            "hh: 'bytes' (UTF-8 bytes) or the symbols "
            "themselves, e.g. abcdefghijklmnopqrstuvwxyz (default bytes).",
        ),
        Option("max_length", "integer", "hh: longest value, in symbols."),
        Option(
            "first",
            "integer",
            "hh: prefix length of level 0 (default 2, or max_length when that is 1).",
        ),
        Option(
            "step",
            "integer",
            "hh: symbols added per level (default 2; 1 when 2 cannot be searched, e.g. bytes).",
        ),
    )

    @classmethod
    def defaults_for_new_task(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Draw a random hash seed unless one is given; refuse what cannot be searched.

        A new task whose default heavy-hitters query (``DEFAULT_SURVIVORS`` survivors)
        would be refused is refused now, with the fix. Only new tasks: a stored task is
        loaded as it was published.
        """
        given = with_hash_seed(given)
        try:
            mechanism = cls.from_fields(given).build()
        except (ParameterError, ValueOutOfDomain):
            return given  # the task's own validation names the problem
        try:
            LevelSearch.check_bounds(len(mechanism.symbols), mechanism.lengths, DEFAULT_SURVIVORS)
        except ParameterError as error:
            raise ParameterError(
                f"hh: the default heavy-hitters query ({DEFAULT_SURVIVORS} survivors) "
                f"could not run: {str(error).split(':')[0]}; use step 1, a smaller first, "
                "or declare a smaller alphabet"
            ) from None
        return given

    def validate(self) -> None:
        """Fill the defaults (bytes, L0 = 2 or 1, s = 2 or 1) and check every parameter is given.

        Level 0 is 2 symbols long unless no value is: a task of one-symbol values
        (``max_length`` 1) starts at 1, the only level it can have.

        The step defaults to 2 unless the default search would then not fit (the bytes
        alphabet: 64 survivors × 59,293 extensions), and then to 1.
        """
        object.__setattr__(self, "epsilon", as_float(self.epsilon))
        if self.alphabet is None:
            object.__setattr__(self, "alphabet", BYTES)
        if self.first is None:
            one_symbol = isinstance(self.max_length, int) and self.max_length == 1
            object.__setattr__(self, "first", 1 if one_symbol else 2)
        if self.step is None:
            symbols = len(UTF8_BYTES) if self.alphabet == BYTES else len(str(self.alphabet))
            object.__setattr__(self, "step", LevelSearch.default_step(symbols))
        self.require("epsilon")
        self.require("k", "m", "hash_seed", "alphabet", "max_length", "first", "step")

    def build(self) -> HeavyHitters:
        """Return the mechanism."""
        assert self.epsilon is not None and self.k is not None and self.m is not None
        assert self.hash_seed is not None and self.alphabet is not None
        assert self.max_length is not None and self.first is not None
        assert self.step is not None  # validate() checked them all
        return HeavyHitters(
            epsilon=self.epsilon,
            k=self.k,
            m=self.m,
            hash_seed=self.hash_seed,
            alphabet=self.alphabet,
            max_length=self.max_length,
            first=self.first,
            step=self.step,
        )
