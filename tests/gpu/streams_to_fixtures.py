#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the allocation streams tests/gpu/detectors.py saved (OUTDIR/streams/NAME.json, each a
/api/v1/memory document) into the fixture format of tests/fixtures/leak_streams: times in ms
from the first allocation, one [allocated_ms, bytes, freed_ms or null] per block, the fault's
time on the same axis (null for healthy cases).

usage: streams_to_fixtures.py OUTDIR/streams FIXTURE_DIR "RECORDED ON ..." [CASE...]
"""
import json
import os
import sys


def convert(document, case, recorded):
    blocks = sorted(document["blocks"], key=lambda b: b["allocated_ns"])
    if not blocks:
        raise ValueError(f"{case}: no blocks")
    origin = blocks[0]["allocated_ns"]
    ms = lambda ns: round((ns - origin) / 1e6, 1)
    fault_ms = None
    if document.get("fault_unix") is not None:
        fault_monotonic_ns = (document["fault_unix"] - document["unix_minus_monotonic"]) * 1e9
        fault_ms = round((fault_monotonic_ns - origin) / 1e6, 1)
    return {
        "case": case,
        "recorded": recorded,
        "fault_ms": fault_ms,
        "end_ms": ms(document["now_ns"]),
        "dropped_blocks": document.get("dropped_blocks", 0),
        "blocks": [[ms(b["allocated_ns"]), b["bytes"], ms(b["freed_ns"]) if b["freed_ns"] else None]
                   for b in blocks],
    }


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    source, target, recorded = sys.argv[1:4]
    cases = sys.argv[4:] or [n[:-5] for n in sorted(os.listdir(source)) if n.endswith(".json")]
    for case in cases:
        with open(os.path.join(source, case + ".json")) as f:
            document = json.load(f)
        name = case.replace("+", "_")
        with open(os.path.join(target, name + ".json"), "w") as f:
            json.dump(convert(document, case, recorded), f,
                      separators=(",", ":"))
        print(f"{name}.json: {len(document['blocks'])} blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
