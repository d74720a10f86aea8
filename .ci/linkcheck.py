"""Checks the internal links of a built mdBook: every href/src to a file of the book names a
file that exists, and every #fragment an id (or name) on that page. External links (with a
scheme, or //host) and mdBook's own assets are not followed. Exits 1 listing each broken link
as `page: link`.

    python .ci/linkcheck.py docs/book
"""

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("id", "name"):
            if a.get(k):
                self.ids.add(a[k])
        for k in ("href", "src"):
            if a.get(k) is not None and tag in ("a", "img", "link", "script", "source"):
                self.links.append(a[k])


def main() -> int:
    root = Path(sys.argv[1]).resolve()
    pages: dict[Path, Page] = {}
    for f in sorted(root.rglob("*.html")):
        p = Page()
        p.feed(f.read_text(encoding="utf-8"))
        pages[f] = p
    if not pages:
        print(f"{root}: no HTML pages", file=sys.stderr)
        return 1
    broken = []
    checked = 0
    for f, p in pages.items():
        # The generated print page repeats every chapter; 404.html links relative to the root.
        if f.name in ("print.html", "404.html"):
            continue
        for link in p.links:
            u = urlsplit(link)
            if u.scheme or link.startswith("//") or link.startswith("mailto:"):
                continue
            target = f if not u.path else (f.parent / unquote(u.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            if not target.exists():
                broken.append(f"{f.relative_to(root)}: {link} (no such file)")
                continue
            if u.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if unquote(u.fragment) not in ids:
                    broken.append(f"{f.relative_to(root)}: {link} (no #{u.fragment} there)")
    for b in broken:
        print(b, file=sys.stderr)
    print(f"links: {len(pages)} pages, {checked} internal links, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
