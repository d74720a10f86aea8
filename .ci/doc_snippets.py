#!/usr/bin/env python3
"""The Python snippets of the docs, as written, for CI to run.

Every fenced ```python block of the book (docs/src/**/*.md) and of README.md is a snippet,
except a block right after the line `<!-- docs-python: skip (why) -->`, which must say why.
A snippet runs as its own script, from the repository's root (the docs' paths are relative to
it), in a fresh interpreter: the one running this script, so run it with the venv's python.

    python .ci/doc_snippets.py --list      # FILE:LINE of each snippet, and the skipped ones
    python .ci/doc_snippets.py             # run them all; exit 1 if any fails

python/tests/test_docs.py runs the same snippets under pytest (`extract` below).
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKIP = re.compile(r"^<!--\s*docs-python:\s*skip\s*\((.+)\)\s*-->\s*$")


@dataclass
class Snippet:
    file: Path
    line: int  # 1-based line of the opening fence
    code: str
    skip: str | None  # the reason, for a skipped block

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}"


def doc_files() -> list[Path]:
    return sorted((REPO / "docs" / "src").rglob("*.md")) + [REPO / "README.md"]


def extract(path: Path) -> list[Snippet]:
    """The ```python blocks of one Markdown file, with their skip marks.

    Raises ValueError for a skip mark not followed by a python block, or a block left open.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Snippet] = []
    i = 0
    pending_skip: tuple[int, str] | None = None
    while i < len(lines):
        line = lines[i]
        m = SKIP.match(line.strip())
        if m:
            pending_skip = (i + 1, m.group(1))
            i += 1
            continue
        stripped = line.strip()
        if stripped.startswith("```"):
            info = stripped[3:].strip()
            start = i
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise ValueError(f"{path}:{start + 1}: code block never closed")
            lang = re.split(r"[\s,{]", info, maxsplit=1)[0] if info else ""
            if lang == "python":
                out.append(Snippet(path, start + 1, "\n".join(body) + "\n",
                                   pending_skip[1] if pending_skip else None))
            elif pending_skip:
                raise ValueError(f"{path}:{pending_skip[0]}: a skip mark must precede a python block")
            pending_skip = None
        elif pending_skip and stripped:
            raise ValueError(f"{path}:{pending_skip[0]}: a skip mark must be followed by a python block")
        i += 1
    return out


def snippets() -> list[Snippet]:
    return [s for f in doc_files() for s in extract(f)]


def run(s: Snippet, timeout_s: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", s.code], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout_s)


def main() -> int:
    all_ = snippets()
    if "--list" in sys.argv[1:]:
        for s in all_:
            print(s.where, f"skip: {s.skip}" if s.skip else "run")
        return 0
    failed = 0
    ran = 0
    for s in all_:
        if s.skip:
            print(f"skip {s.where}: {s.skip}")
            continue
        ran += 1
        r = run(s)
        if r.returncode == 0:
            print(f"ok   {s.where}")
        else:
            failed += 1
            print(f"FAIL {s.where}\n{r.stdout}{r.stderr}")
    print(f"{ran - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
