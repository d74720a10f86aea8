"""Every Python snippet of the book and the README runs as written (.ci/doc_snippets.py)."""

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("doc_snippets", REPO / ".ci" / "doc_snippets.py")
doc_snippets = importlib.util.module_from_spec(_spec)
sys.modules["doc_snippets"] = doc_snippets  # dataclasses look their module up there
_spec.loader.exec_module(doc_snippets)

SNIPPETS = doc_snippets.snippets()


def test_the_docs_have_python_snippets():
    # The Python guide's examples are snippets; an extraction that finds none is broken.
    assert any(s.file.name == "python.md" and not s.skip for s in SNIPPETS)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.where for s in SNIPPETS])
def test_snippet_runs_as_written(snippet):
    if snippet.skip:
        pytest.skip(snippet.skip)
    r = doc_snippets.run(snippet)
    assert r.returncode == 0, f"{snippet.where} failed:\n{r.stdout}{r.stderr}"


def test_a_skip_mark_must_precede_a_python_block(tmp_path):
    p = tmp_path / "page.md"
    p.write_text("<!-- docs-python: skip (why) -->\n```sh\nls\n```\n")
    with pytest.raises(ValueError):
        doc_snippets.extract(p)
    p.write_text("text\n<!-- docs-python: skip (why) -->\n```python\nimport x\n```\n```python\nprint(1)\n```\n")
    got = doc_snippets.extract(p)
    assert [(s.line, s.skip) for s in got] == [(3, "why"), (6, None)]
