#!/usr/bin/env python3
"""The doc-path check (ctest: doc_paths, label lint): every repository path a
document names exists, so the prose cannot go stale when files move.

Documents: README.md, docs/*.md, and every README.md below a repository
folder (bench/README.md, tests/faults/README.md, ...).

What counts as a path, and where it must exist:

  - a Markdown link target that is not a URL or an anchor ("](x.md#part)")
    resolves from the document's own folder, as a Markdown viewer does:
    in docs/, "../README.md" and "BUILDING.md", not "docs/BUILDING.md"
    (the "#part" is tools/check_readme.pl's to check);
  - anywhere else on a line (prose, `code`, code blocks), a token of the
    form "a/b..." whose first part is a top folder of the repository (ROOTS:
    add a new top folder there) resolves
    from the repository's top ("src/core/claim.cpp", "tests/faults/",
    "bash scripts/demo.sh"); a token that starts with "../" resolves from
    the document's folder;
  - a token whose first part is a layer folder of src/ resolves from src/,
    as docs/ARCHITECTURE.md and #include lines name them
    ("net/connection.h" is src/net/connection.h), and one that starts with
    "fairlock/" resolves from include/ ("fairlock/errors.h"); these two are
    checked only when they end in a file name with an extension or in "/",
    so that prose such as "the api/core cut" is not taken for a path.

Not checked: bare file names ("main.cpp": no folder says which one), paths
under folders outside ROOTS (build/..., /tmp/..., lib/cmake/... of an
install), a token right after "/", ":" or "." (URLs, absolute paths, a part
of a longer path). A "*" matches by glob (at least one file), a brace
list names each of its paths ("latest.{md,svg}"); a trailing
"..." or sentence punctuation is dropped ("tests/..." is tests/).

    python3 tools/check_doc_paths.py [REPO]  (default: the repository holding this file)

Exit 1 with one "file:line: path" line per finding.
"""
import os
import pathlib
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_layers import LAYERS  # noqa: E402  (src/'s layer folders, one list)

ROOTS = ["src", "include", "lua", "tests", "bench", "tools", "examples", "scripts", "docs", "cmake", ".ci"]
LINK = re.compile(r"\]\(([^)\s]+)\)")
PART = r"(?:[\w.*-]|\{[\w.,*-]*\})"
TOKEN = re.compile(r"(?<![\w./:@~$<-])((?:\.\./)*\.?[\w-]" + PART + r"*(?:/" + PART + r"*)+)")
BRACES = re.compile(r"\{([^{}]*)\}")
FILE_NAME = re.compile(r"/$|\.[A-Za-z0-9]+$")


def documents(repo):
    docs = [repo / "README.md"] + sorted((repo / "docs").glob("*.md"))
    for root in ROOTS:
        if (repo / root).is_dir():
            docs += sorted(p for p in (repo / root).rglob("README.md") if root != "docs")
    return [d for d in docs if d.is_file()]


def expand(text):
    """A shell brace list, "latest.{md,svg}", as the paths it names."""
    match = BRACES.search(text)
    if match is None:
        return [text]
    return [p for alt in match.group(1).split(",") for p in expand(text[: match.start()] + alt + text[match.end() :])]


def exists(path):
    if "*" in str(path):
        anchor = path.anchor or "."
        return any(pathlib.Path(anchor).glob(str(path.relative_to(anchor))))
    return path.exists()


def link_target(target, doc_dir):
    """The file a link names, or None for a URL, an anchor or mail."""
    if "://" in target or target.startswith(("#", "mailto:")):
        return None
    return doc_dir / target.split("#")[0]


def token_target(token, repo, doc_dir):
    """The file a token in the text names, or None when it is not a repository path."""
    if not token or "/" not in token:
        return None
    if token.startswith("../"):
        return doc_dir / token
    head = token.split("/")[0]
    if head in ROOTS:
        return repo / token
    if head in LAYERS and FILE_NAME.search(token):
        return repo / "src" / token
    if head == "fairlock" and FILE_NAME.search(token):
        return repo / "include" / token
    return None


def doc_findings(doc, repo):
    findings = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        named = []
        for match in LINK.finditer(line):
            named.append((match.group(1), link_target(match.group(1), doc.parent)))
        rest = LINK.sub("]()", line)
        for match in TOKEN.finditer(rest):
            token = match.group(1).rstrip(".,;:")
            named.append((token, token_target(token, repo, doc.parent)))
        for text, target in named:
            missing = [t for t in expand(str(target)) if not exists(pathlib.Path(os.path.normpath(t)))] if target else []
            if missing:
                findings.append(f"{doc.relative_to(repo).as_posix()}:{number}: {text}: no such file or folder")
    return findings


def main():
    repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    repo = repo.resolve()
    docs = documents(repo)
    findings = [f for doc in docs for f in doc_findings(doc, repo)]
    for f in findings:
        print(f)
    if findings:
        print(f"check_doc_paths: {len(findings)} path(s) named in the docs do not exist (rule: tools/check_doc_paths.py)")
        return 1
    print(f"check_doc_paths: every path named in {len(docs)} documents exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
