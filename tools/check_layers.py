#!/usr/bin/env python3
"""The layer check (ctest: layers, label lint; docs/ARCHITECTURE.md).

src/ is split into layer folders, lowest first: base, net, protocol, node,
core, api. A file may include headers of its own folder or of a lower one,
by their path from src/ ("net/connection.h"), plus the public headers
("fairlock/...") and the generated script table ("fairlock_lua.h", of the
protocol layer). This fails (exit 1, one line per finding) when

  - an include points up a layer, or names no header of a layer folder;
  - the folders' include graph has a cycle (impossible while the first rule
    holds; checked on its own so that a change to LAYERS cannot hide one);
  - a source file sits outside the layer folders;
  - docs/ARCHITECTURE.md does not name a header under src/ by its path
    from src/, so the map cannot go stale;
  - script knowledge leaks out of src/protocol/: an error code the lua/
    scripts raise ("FLBADARG") or a name's key suffix ("}:seq", from
    protocol/keys.cpp's table) is spelled in src/ outside protocol/, in
    bench/ or in tools/cli/ (tests/ may: they check the protocol), or a
    code the scripts raise is not mapped in src/protocol/.

    tools/check_layers.py [REPO]     (default: the repository holding this file)
"""
import pathlib
import re
import sys

LAYERS = ["base", "net", "protocol", "node", "core", "api"]
# Quoted includes that are not under src/: the public headers, and the
# generated script table with the layer it belongs to.
PUBLIC = re.compile(r"^fairlock/[a-z_]+\.h$")
GENERATED = {"fairlock_lua.h": "protocol"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def layer_of(path, src):
    parts = path.relative_to(src).parts
    return parts[0] if len(parts) > 1 and parts[0] in LAYERS else None


def include_findings(src, edges):
    findings = []
    rank = {name: i for i, name in enumerate(LAYERS)}
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        rel = path.relative_to(src).as_posix()
        own = layer_of(path, src)
        if own is None:
            findings.append(f"src/{rel}: outside the layer folders ({', '.join(LAYERS)})")
            continue
        for target in INCLUDE.findall(path.read_text(encoding="utf-8")):
            if PUBLIC.match(target):
                continue
            to = GENERATED.get(target)
            if to is None:
                head = target.split("/")[0]
                to = head if "/" in target and (src / target).is_file() and head in rank else None
            if to is None:
                findings.append(f'src/{rel}: #include "{target}": not "<layer>/<header>" of a header under src/')
            elif rank[to] > rank[own]:
                findings.append(f'src/{rel}: #include "{target}" points up, from {own}/ to {to}/')
            if to is not None and to != own:
                edges.setdefault(own, set()).add(to)
    return findings


def cycle_findings(edges):
    state = {}  # folder -> "open" while on the DFS stack, "done" after
    findings = []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [node, nxt]
                findings.append("include cycle between folders: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt, stack + [node])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    return findings


def map_findings(repo, src):
    doc = repo / "docs" / "ARCHITECTURE.md"
    if not doc.is_file():
        return ["docs/ARCHITECTURE.md: missing"]
    text = doc.read_text(encoding="utf-8")
    return [
        f"docs/ARCHITECTURE.md: does not name src/{h.relative_to(src).as_posix()}"
        for h in sorted(src.rglob("*.h"))
        if h.relative_to(src).as_posix() not in text
    ]


# Where script knowledge must not be spelled (src/protocol/ excepted).
KNOWLEDGE_FREE = ["src", "bench", "tools/cli"]
SCANNED = (".h", ".cpp", ".py", ".sh")
# lua/lib.lua raises fail('<CODE>', ...) as "FL<CODE> ..."; a script may
# also spell error_reply('FL<CODE> ...') itself.
LUA_FAIL = re.compile(r"""\bfail\(\s*'([A-Z]+)'""")
LUA_ERROR_REPLY = re.compile(r"""error_reply\(\s*'(FL[A-Z]+)\b""")
# protocol/keys.cpp's table of the keys: {&Keys::q, "q"}.
KEY_ENTRY = re.compile(r'\{\s*&Keys::\w+\s*,\s*"([a-z]+)"\s*\}')


def script_codes(repo):
    codes = set()
    for lua in sorted((repo / "lua").glob("*.lua")):
        text = lua.read_text(encoding="utf-8")
        codes.update("FL" + c for c in LUA_FAIL.findall(text))
        codes.update(LUA_ERROR_REPLY.findall(text))
    return codes


def knowledge_findings(repo, src):
    codes = script_codes(repo)
    keys_cpp = src / "protocol" / "keys.cpp"
    suffixes = set(KEY_ENTRY.findall(keys_cpp.read_text(encoding="utf-8"))) if keys_cpp.is_file() else set()
    findings = []
    if not codes:
        findings.append("lua/: no script error code found (fail('<CODE>', ...)): the knowledge check reads nothing")
    if not suffixes:
        findings.append('src/protocol/keys.cpp: no key table ({&Keys::q, "q"}): the knowledge check reads nothing')
    if findings:
        return findings
    spelled = re.compile(r"\b(" + "|".join(sorted(codes)) + r")\b|\}:(" + "|".join(sorted(suffixes)) + r")(?![\w-])")
    protocol = "".join(p.read_text(encoding="utf-8") for p in sorted((src / "protocol").glob("*.cpp")))
    findings += [f"src/protocol/: does not map {code}, which lua/ raises" for code in sorted(codes) if code not in protocol]
    for top in KNOWLEDGE_FREE:
        for path in sorted((repo / top).rglob("*")):
            if path.suffix not in SCANNED or (src / "protocol") in path.parents:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for m in spelled.finditer(line):
                    what = f"script error code {m.group(1)}" if m.group(1) else f"key suffix }}:{m.group(2)}"
                    findings.append(f"{path.relative_to(repo).as_posix()}:{n}: spells the {what} (src/protocol/ only)")
    return findings


def main():
    repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    src = repo / "src"
    edges = {}
    findings = (include_findings(src, edges) + cycle_findings(edges) + map_findings(repo, src) +
                knowledge_findings(repo, src))
    for f in findings:
        print(f)
    if findings:
        print(f"check_layers: {len(findings)} finding(s); the layers and the rule: docs/ARCHITECTURE.md")
        return 1
    headers = len(list(src.rglob("*.h")))
    print(f"check_layers: includes point down ({' < '.join(LAYERS)}), no cycle, all {headers} headers mapped, "
          f"script codes and key suffixes in src/protocol/ only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
