#!/usr/bin/env python3
"""Totals of the fault suite's "[figures]" lines, for the README's reliability
section. Run the suite with ctest, then:
    python3 tests/faults/figures.py build/Testing/Temporary/LastTest.log
"""
import re
import sys

text = open(sys.argv[1] if len(sys.argv) > 1 else "Testing/Temporary/LastTest.log", errors="replace").read()
lines = re.findall(r"\[figures\] (.*)", text)
total = lambda pattern: sum(int(m) for line in lines for m in re.findall(pattern, line))
scenarios = [l for l in lines if re.search(r"^\w+: \d+ grants \(", l)]
figures = {
    "scenarios checked": len(scenarios),
    "grants checked (history)": total(r"^\w+: (\d+) grants \("),
    "grants linked to the server's own record": total(r"(\d+) linked to the server's grant"),
    "script runs replayed from MONITOR": total(r"server log: (\d+) script runs"),
    "faults injected (scenario count)": total(r"faults injected: (\d+)"),
    "processes SIGKILLed at random points": total(r"kills: (\d+) holders") + total(r"(\d+) waiters, \d+ anywhere")
    + total(r"(\d+) anywhere"),
    "connections killed": total(r"killed (\d+) command") + total(r"and (\d+) subscriber connections"),
    "FUNCTION FLUSH + SCRIPT FLUSH (scenario)": total(r"(\d+) FUNCTION FLUSH \+ SCRIPT FLUSH,"),
    "FLUSHALL": total(r"(\d+) FLUSHALL"),
    "tamper cases": len([l for l in lines if l.startswith("tamper '")]),
    "tamper cases recovered": len([l for l in lines if l.startswith("tamper '") and l.endswith("recovered yes")]),
    "bad inputs tried": total(r"(\d+) inputs tried"),
    "ACL permissions shown needed": len([l for l in lines if l.startswith("without '")]),
    "ACL permissions shown needed on a cluster": len([l for l in lines if l.startswith("cluster, without '")]),
    "tokens checked": total(r"(\d+) tokens from"),
    "belief overlaps (user's view)": total(r"; (\d+) belief overlaps"),
    "async waits checked (callback once)": total(r"; (\d+) async waits, "),
}
for line in lines:
    if line.startswith("soak:"):
        figures["soak"] = line[len("soak: "):]
for k, v in figures.items():
    print(f"{k}: {v}")
violations = len(re.findall(r"history: |server-side: ", text))
print(f"checker violations reported: {violations}")
