#!/usr/bin/env python3
"""The size check (ctest: sizes, label lint; docs/ARCHITECTURE.md).

Short files and short functions keep src/ readable: this fails (exit 1, one
line per finding) when

  - a file under src/ (.h or .cpp) has more than MAX_FILE_LINES lines;
  - a function defined in a .cpp file under src/ has a body of more than
    MAX_FUNCTION_LINES lines.

How a function is found and counted (a simple brace-matching scan, not a
parser): comments, string and character literals are blanked first. Braces
are then matched over the file. `namespace ... {` and `extern "C" {` blocks
are transparent; any other block opened outside every other block is a
function body when the text before its `{` (back to the previous `;`, `{` or
`}`) has a `(` and starts no class, struct, union or enum and has no `=`
(an initializer). Its size is the number of lines from the line of its
opening brace to the line of its closing brace, both included, so a lambda
or local class inside a function counts towards that function. Functions
defined inside a class body in a .cpp file are not looked at separately
(the class is not a function); headers are only checked for their length.

    tools/check_sizes.py [REPO]     (default: the repository holding this file)
"""
import pathlib
import re
import sys

MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60

# Comments, then string and character literals (raw strings are not used in src/).
LITERALS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
NOT_A_FUNCTION = re.compile(r"\b(class|struct|union|enum)\b|=")
TRANSPARENT = re.compile(r'\b(namespace\b[\w:\s]*|extern\s+"C"\s*)$')


def blank(text):
    """The text with comments and literals replaced by spaces (newlines kept)."""
    return LITERALS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def functions(text):
    """(name, first line, line count) of each function body of a .cpp text."""
    code = blank(text)
    found = []
    stack = []  # per open brace: "transparent", "function" or "other"
    head_start = 0  # where the text before the next top-level brace begins
    opened_at = None  # (offset, name) of the function body open now
    for i, ch in enumerate(code):
        if ch == "{":
            head = code[head_start:i]
            if all(kind == "transparent" for kind in stack):
                if TRANSPARENT.search(head.rstrip()):
                    kind = "transparent"
                elif "(" in head and not NOT_A_FUNCTION.search(head):
                    kind = "function"
                    name = re.findall(r"([\w:~]+)\s*\(", head)
                    opened_at = (i, name[0] if name else "?")
                else:
                    kind = "other"
            else:
                kind = "inner"
            stack.append(kind)
            head_start = i + 1
        elif ch == "}":
            kind = stack.pop() if stack else "other"
            if kind == "function" and opened_at is not None:
                start, name = opened_at
                first = code.count("\n", 0, start) + 1
                last = code.count("\n", 0, i) + 1
                found.append((name, first, last - first + 1))
                opened_at = None
            head_start = i + 1
        elif ch == ";" and all(kind == "transparent" for kind in stack):
            head_start = i + 1
    return found


def main():
    repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    src = repo / "src"
    findings = []
    files = 0
    bodies = 0
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        files += 1
        rel = path.relative_to(repo).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > MAX_FILE_LINES:
            findings.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES})")
        if path.suffix != ".cpp":
            continue
        for name, first, count in functions(text):
            bodies += 1
            if count > MAX_FUNCTION_LINES:
                findings.append(f"{rel}:{first}: {name}: a body of {count} lines (at most {MAX_FUNCTION_LINES})")
    for f in findings:
        print(f)
    if findings:
        print(f"check_sizes: {len(findings)} finding(s); the rule: tools/check_sizes.py's docstring")
        return 1
    print(
        f"check_sizes: {files} files under src/ of at most {MAX_FILE_LINES} lines, "
        f"{bodies} function bodies of at most {MAX_FUNCTION_LINES}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
