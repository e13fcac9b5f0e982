#!/usr/bin/env python3
"""Keeps doc/clients.md's code the code the clients layer runs.

Every code block of the guide is a copy of a region of a test file, the lines
between `guide: begin NAME` and `guide: end` (in that file's comment syntax),
named by an HTML comment on the line above the block:

    <!-- snippet: test/clients/python/test_psycopg.py psycopg -->

    python3 test/clients/snippets.py --check   fails on any difference, on a
                                                block without a snippet line,
                                                and on a region the guide
                                                does not show (run by the
                                                layer)
    python3 test/clients/snippets.py --write   copies the regions into the guide

A block may instead follow `<!-- untested: why -->` (a client this machine
cannot run) or be a `text` block (what a command prints).
"""
import pathlib
import re
import sys
import textwrap

CHECKOUT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = CHECKOUT / "doc" / "clients.md"
BEGIN = re.compile(r"^\s*(?:#|//|--)\s*guide: begin (\S+)\s*$")
END = re.compile(r"^\s*(?:#|//|--)\s*guide: end\s*$")
SNIPPET = re.compile(r"^<!-- snippet: (\S+) (\S+) -->$")
UNTESTED = re.compile(r"^<!-- untested: .+ -->$")


def regions(path):
    """The guide regions of a test file, by name."""
    found, name, lines = {}, None, []
    for number, line in enumerate((CHECKOUT / path).read_text().splitlines(), 1):
        if name is None:
            match = BEGIN.match(line)
            if match:
                name, lines = match.group(1), []
        elif END.match(line):
            if name in found:
                sys.exit(f"{path}:{number}: a second region named {name}")
            found[name] = textwrap.dedent("\n".join(lines)).strip("\n")
            name = None
        else:
            lines.append(line)
    if name is not None:
        sys.exit(f"{path}: region {name} has no 'guide: end'")
    return found


def blocks(text):
    """Each fenced block of the guide: (line number, the line above it, the
    index of its first and last content lines)."""
    lines = text.split("\n")
    number = 0
    while number < len(lines):
        if lines[number].startswith("```"):
            start = number
            number += 1
            while not lines[number].startswith("```"):
                number += 1
            above = lines[start - 1] if start > 0 else ""
            yield start, lines[start], above, start + 1, number
        number += 1


def main(mode):
    text = GUIDE.read_text()
    lines = text.split("\n")
    problems, used, replacements = [], set(), []
    files = {}
    for start, fence, above, first, last in blocks(text):
        where = f"doc/clients.md:{start + 1}"
        match = SNIPPET.match(above)
        if not match:
            if fence.strip() != "```text" and not UNTESTED.match(above):
                problems.append(f"{where}: a code block with no <!-- snippet: FILE NAME --> line above it")
            continue
        path, name = match.groups()
        if path not in files:
            if not (CHECKOUT / path).is_file():
                problems.append(f"{where}: no file {path}")
                continue
            files[path] = regions(path)
        if name not in files[path]:
            problems.append(f"{where}: {path} has no region {name}")
            continue
        used.add((path, name))
        wanted = files[path][name]
        shown = "\n".join(lines[first:last])
        if shown != wanted:
            problems.append(f"{where}: differs from {path} {name}")
            replacements.append((first, last, wanted))
    # Every region of every test file is shown, so none is kept for nothing.
    for path in sorted(CHECKOUT.glob("test/**/*")):
        if path.is_file() and "node_modules" not in path.parts and path.suffix in {
            ".py", ".js", ".mjs", ".java", ".rb", ".go", ".sql", ".sh", ".php", ".t", ".cpp", ".rs", ".toml",
            ".prisma"
        } and path.name != "snippets.py":
            relative = str(path.relative_to(CHECKOUT))
            for name in regions(relative):
                if (relative, name) not in used:
                    problems.append(f"{relative}: region {name} is not in doc/clients.md")
    if mode == "--write":
        for first, last, wanted in reversed(replacements):
            lines[first:last] = wanted.split("\n")
        GUIDE.write_text("\n".join(lines))
        print(f"doc/clients.md: {len(replacements)} blocks rewritten")
        problems = [p for p in problems if "differs from" not in p]
    for problem in problems:
        print(problem)
    print(f"snippets: {len(used)} blocks of doc/clients.md are the layer's code, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("--check", "--write"):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
