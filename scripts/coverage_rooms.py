#!/usr/bin/env python3
"""Sums gcovr's JSON summary per room (the first folder of each path: core,
specs, io, cli) and prints lines and branches covered, room by room, then in
all. Usage: coverage_rooms.py build-cov/coverage/summary.json"""
import json
import sys
from collections import defaultdict


def main(path):
    with open(path) as f:
        files = json.load(f)["files"]
    rooms = defaultdict(lambda: [0, 0, 0, 0])  # lines covered, lines, branches covered, branches
    for entry in files:
        room = entry["filename"].split("/", 1)[0]
        for key in (room, "all"):
            counts = rooms[key]
            counts[0] += entry["line_covered"]
            counts[1] += entry["line_total"]
            counts[2] += entry["branch_covered"]
            counts[3] += entry["branch_total"]
    print(f"{'room':<8}{'lines':>22}{'branches':>22}")
    for room in sorted(rooms, key=lambda r: (r == "all", r)):
        lc, lt, bc, bt = rooms[room]
        print(f"{room:<8}{percent(lc, lt):>8} {lc:>6}/{lt:<6}{percent(bc, bt):>8} {bc:>6}/{bt:<6}")


def percent(part, whole):
    return f"{100.0 * part / whole:.1f} %" if whole else "-"


if __name__ == "__main__":
    main(sys.argv[1])
