"""pure-ldp's heavy hitters (PEM, SFP) on a population: run in the baseline virtualenv.

    bench-results/.baseline-venv/bin/python \
        benchmarks/baselines/heavy_hitters_runner.py IN.json OUT.json

IN holds ``values``, ``epsilon``, ``alphabet``, ``max_length``, ``fragment``, ``top``,
``cms_k`` and ``cms_m``; OUT gets one record per configuration tried: the strings found
(top first), the wall time, or the error it raised. Imports nothing of this project.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any


def index_mapper(alphabet: list[str]) -> Any:
    """Map a string over the alphabet to an integer (base |alphabet|, as pure-ldp expects)."""
    position = {symbol: i for i, symbol in enumerate(alphabet)}

    def mapper(text: str) -> int:
        value = 0
        for symbol in text:
            value = value * len(alphabet) + position.get(symbol, 0)
        return value

    return mapper


def run(name: str, make: Any, values: list[str], top: int) -> dict[str, Any]:
    """Privatise every value, aggregate, find the top; record the result or the failure."""
    started = time.perf_counter()
    try:
        client, server = make()
        for value in values:
            server.aggregate(client.privatise(value))
        found, _ = server.find_heavy_hitters(k=top)
        strings = [str(s).split("*")[0] for s in found]
        return {"name": name, "found": strings, "seconds": time.perf_counter() - started}
    except Exception as error:  # the failure is the measurement
        last = traceback.format_exception_only(type(error), error)[-1].strip()
        return {"name": name, "error": last[:300], "seconds": time.perf_counter() - started}


def main() -> None:
    """Run PEM and SFP (defaults, then with pure-ldp's CMS) on IN; write OUT."""
    with open(sys.argv[1], encoding="utf-8") as source:
        spec = json.load(source)
    from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
    from pure_ldp.heavy_hitters.apple_sfp import SFPClient, SFPServer
    from pure_ldp.heavy_hitters.prefix_extending import PEMClient, PEMServer

    alphabet, eps, length = list(spec["alphabet"]), spec["epsilon"], spec["max_length"]
    fragment, top, values = spec["fragment"], spec["top"], spec["values"]
    mapper = index_mapper(alphabet)

    def pem() -> Any:
        common = dict(
            epsilon=eps,
            start_length=0,
            max_string_length=length,
            fragment_length=fragment,
            alphabet=alphabet,
            index_mapper=mapper,
        )
        return PEMClient(**common), PEMServer(**common)

    def pem_cms() -> Any:
        server_oracle = CMSServer(eps, spec["cms_k"], spec["cms_m"], index_mapper=mapper)
        client_oracle = CMSClient(eps, server_oracle.get_hash_funcs(), spec["cms_m"])
        common = dict(
            epsilon=eps,
            start_length=0,
            max_string_length=length,
            fragment_length=fragment,
            alphabet=alphabet,
            index_mapper=mapper,
        )
        return (
            PEMClient(**common, fo_client=client_oracle),
            PEMServer(**common, fo_server=server_oracle),
        )

    def sfp_defaults() -> Any:
        common = dict(
            epsilon=eps,
            fragment_length=fragment,
            max_string_length=length,
            alphabet=set(alphabet),
            index_mapper=mapper,
        )
        return SFPClient(**common), SFPServer(**common)

    def sfp_cms() -> Any:
        server_oracle = CMSServer(eps, spec["cms_k"], spec["cms_m"], index_mapper=mapper)
        client_oracle = CMSClient(eps, server_oracle.get_hash_funcs(), spec["cms_m"])
        common = dict(
            epsilon=eps,
            fragment_length=fragment,
            max_string_length=length,
            alphabet=set(alphabet),
            index_mapper=mapper,
        )
        return (
            SFPClient(**common, fo_client=client_oracle),
            SFPServer(**common, fo_server=server_oracle),
        )

    results = [
        run("pure-ldp PEM (defaults: OLH per group)", pem, values, top),
        run("pure-ldp PEM (with its CMS)", pem_cms, values, top),
        run("pure-ldp SFP (defaults)", sfp_defaults, values, top),
        run("pure-ldp SFP (with its CMS)", sfp_cms, values, top),
    ]
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        json.dump(results, out)


if __name__ == "__main__":
    main()
