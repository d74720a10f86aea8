//! The documentation against the tree: the README stays a door (≤ 300 lines, the two set-up
//! commands), every relative link of the book and the root docs resolves (file and heading),
//! `SUMMARY.md` lists every page of the book, the Layout of `ARCHITECTURE.md` names every
//! module, the committed-scenario table names every committed scenario, and every repository
//! path a page names in backticks exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every `.md` file under `dir`, sorted.
fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// The pages checked: the book, the root docs and the crate READMEs.
fn pages() -> Vec<PathBuf> {
    let r = repo();
    let mut v = markdown_under(&r.join("docs/src"));
    for p in [
        "README.md",
        "ARCHITECTURE.md",
        "benches/README.md",
        "scheduler/README.md",
        "extender/README.md",
        "traces/README.md",
    ] {
        v.push(r.join(p));
    }
    v
}

/// The lines outside fenced code blocks, with their 1-based numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, l));
        }
    }
    out
}

/// The anchor mdBook and GitHub give a heading: lower case, spaces to `-`, other punctuation
/// dropped (backticks included).
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .into_iter()
        .filter_map(|(_, l)| {
            let h = l.trim_start_matches('#');
            (h.len() < l.len() && h.starts_with(' ')).then(|| slug(h))
        })
        .collect()
}

/// The targets of the inline links `[text](target)` of one line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        match after.find(')') {
            Some(j) => {
                out.push(&after[..j]);
                rest = &after[j..];
            }
            None => break,
        }
    }
    out
}

/// Broken relative links of `page` (`FILE:LINE: target: why`).
fn broken_links(page: &Path) -> Vec<String> {
    let text = read(page);
    let mut bad = Vec::new();
    for (n, line) in prose(&text) {
        for t in link_targets(line) {
            if t.contains("://") || t.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = t.split_once('#').unwrap_or((t, ""));
            let target = if path.is_empty() {
                page.to_path_buf()
            } else {
                page.parent().unwrap().join(path)
            };
            let why = if !target.exists() {
                Some("no such file")
            } else if !anchor.is_empty()
                && target.extension().is_some_and(|x| x == "md")
                && !anchors(&read(&target)).contains(anchor)
            {
                Some("no such heading")
            } else {
                None
            };
            if let Some(why) = why {
                bad.push(format!("{}:{n}: {t}: {why}", page.display()));
            }
        }
    }
    bad
}

#[test]
fn the_readme_is_a_door() {
    let text = read(&repo().join("README.md"));
    let lines = text.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; the manual is the book in docs/"
    );
    // "Set up": exactly two commands, one running the embedded default, one the tests.
    let setup = text
        .split("## Set up")
        .nth(1)
        .expect("README.md has a `## Set up` section");
    let block = setup
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the set-up section has a sh block");
    let commands: Vec<&str> = block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        commands,
        ["cargo run --release -- run", "cargo test --workspace"],
        "the README's set-up commands"
    );
}

#[test]
fn every_relative_link_resolves() {
    let bad: Vec<String> = pages().iter().flat_map(|p| broken_links(p)).collect();
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

/// The checker finds a missing file and a missing heading (so the test above can fail).
#[test]
fn a_broken_link_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.md"), "# Title\n## The `x = 0` case\n").unwrap();
    let a = dir.path().join("a.md");
    std::fs::write(
        &a,
        "[ok](b.md#the-x--0-case) [gone](c.md) [nohead](b.md#nope)\n```\n[code](z.md)\n```\n",
    )
    .unwrap();
    let bad = broken_links(&a);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].ends_with("c.md: no such file"), "{bad:?}");
    assert!(bad[1].ends_with("b.md#nope: no such heading"), "{bad:?}");
}

#[test]
fn the_summary_lists_every_page_of_the_book() {
    let src = repo().join("docs/src");
    let summary = read(&src.join("SUMMARY.md"));
    let listed: BTreeSet<PathBuf> = summary
        .lines()
        .flat_map(link_targets)
        .map(|t| src.join(t))
        .collect();
    for p in &listed {
        assert!(
            p.exists(),
            "SUMMARY.md lists {} which does not exist",
            p.display()
        );
    }
    let pages: BTreeSet<PathBuf> = markdown_under(&src)
        .into_iter()
        .filter(|p| !p.ends_with("SUMMARY.md"))
        .collect();
    let missing: Vec<_> = pages.difference(&listed).collect();
    assert!(missing.is_empty(), "pages not in SUMMARY.md: {missing:?}");
}

/// The Layout block of `ARCHITECTURE.md`: `(path, its description)` per entry. An entry is a
/// line starting with a path; the indented lines after it continue its description.
fn layout() -> Vec<(String, String)> {
    let text = read(&repo().join("ARCHITECTURE.md"));
    let block = text
        .split("## Layout")
        .nth(1)
        .and_then(|s| s.split("```\n").nth(1))
        .expect("ARCHITECTURE.md has a `## Layout` section with a code block");
    let mut out: Vec<(String, String)> = Vec::new();
    for l in block.lines() {
        if l.starts_with(' ') {
            out.last_mut()
                .expect("a continuation line before the first entry")
                .1
                .push_str(&format!(" {}", l.trim()));
        } else if let Some((path, desc)) = l.split_once(' ') {
            out.push((path.to_string(), desc.trim().to_string()));
        } else if !l.is_empty() {
            out.push((l.to_string(), String::new()));
        }
    }
    out
}

/// The words of a description (identifier characters), to find a module's name in it.
fn words(s: &str) -> BTreeSet<String> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// What the Layout does not cover: for every source root, each `.rs` file and folder under
/// it must have its own entry, or be named (by file stem or folder name, `mod.rs`, `lib.rs`
/// and `main.rs` by their folder) in the description of the entry of its folder; every
/// top-level folder of the repository must have an entry; every entry must exist.
fn layout_gaps(root: &Path, entries: &[(String, String)]) -> Vec<String> {
    let mut gaps = Vec::new();
    for (path, _) in entries {
        if !root.join(path.trim_end_matches('/')).exists() {
            gaps.push(format!("{path}: listed but not in the tree"));
        }
    }
    let has = |p: &str| entries.iter().any(|(e, _)| e == p);
    let desc = |p: &str| {
        entries
            .iter()
            .find(|(e, _)| e == p)
            .map(|(_, d)| words(d))
            .unwrap_or_default()
    };
    let mut top: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !matches!(n.as_str(), ".git" | "target" | "out"))
        .collect();
    top.sort();
    for name in top {
        let ignored = std::process::Command::new("git")
            .args(["check-ignore", "-q", &name])
            .current_dir(root)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ignored && !has(&format!("{name}/")) {
            gaps.push(format!("{name}/: a top-level folder without an entry"));
        }
    }
    // Covered: an entry of its own, or an entry of a folder above it whose description
    // names every step below that folder (`scheduler/` naming `src`, `security` and
    // `authz` covers `scheduler/src/security/authz.rs`; `mod.rs`, `lib.rs` and `main.rs`
    // stand for their folder).
    let covered = |rel: &str| {
        if has(rel) || has(&format!("{rel}/")) {
            return true;
        }
        let mut steps: Vec<String> = rel
            .split('/')
            .map(|s| s.strip_suffix(".rs").unwrap_or(s).to_string())
            .collect();
        if matches!(
            steps.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            steps.pop();
        }
        (1..steps.len()).any(|k| {
            let folder = format!("{}/", steps[..k].join("/"));
            let d = desc(&folder);
            has(&folder) && steps[k..].iter().all(|s| d.contains(s))
        }) || (steps.len() < rel.split('/').count() && has(&format!("{}/", steps.join("/"))))
    };
    for src in ["src", "policies/src", "scheduler/src", "extender/src"] {
        let mut stack = vec![root.join(src)];
        while let Some(dir) = stack.pop() {
            let mut kids: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            kids.sort();
            for k in kids {
                let rel = k.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                if k.is_dir() {
                    stack.push(k.clone());
                } else if k.extension().is_none_or(|x| x != "rs") {
                    continue;
                }
                if !covered(&rel) {
                    gaps.push(format!("{rel}: not in the Layout"));
                }
            }
        }
    }
    gaps
}

#[test]
fn the_layout_names_every_module() {
    let gaps = layout_gaps(&repo(), &layout());
    assert!(
        gaps.is_empty(),
        "ARCHITECTURE.md's Layout and the tree disagree:\n{}",
        gaps.join("\n")
    );
}

/// The Layout check finds a module the Layout does not name (so the test above can fail).
#[test]
fn a_module_missing_from_the_layout_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in [
        "src/engine",
        "policies/src",
        "scheduler/src",
        "extender/src",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for f in [
        "src/lib.rs",
        "src/engine/mod.rs",
        "src/engine/events.rs",
        "src/engine/serving.rs",
        "policies/src/lib.rs",
        "scheduler/src/lib.rs",
        "extender/src/lib.rs",
    ] {
        std::fs::write(root.join(f), "").unwrap();
    }
    let entries = |engine: &str| {
        [
            ("src/", ""),
            ("src/lib.rs", "root"),
            ("src/engine/", engine),
            ("policies/", ""),
            ("policies/src/", "lib.rs"),
            ("scheduler/", "src/: lib"),
            ("extender/", "src/"),
        ]
        .iter()
        .map(|(p, d)| (p.to_string(), d.to_string()))
        .collect::<Vec<_>>()
    };
    assert!(layout_gaps(root, &entries("the loop; events; serving")).is_empty());
    assert_eq!(
        layout_gaps(root, &entries("the loop; events (the queue)")),
        ["src/engine/serving.rs: not in the Layout"]
    );
    let mut e = entries("events; serving");
    e.push(("src/gone.rs".into(), String::new()));
    assert_eq!(
        layout_gaps(root, &e),
        ["src/gone.rs: listed but not in the tree"]
    );
}

#[test]
fn every_committed_scenario_is_in_the_table() {
    let r = repo();
    let table = read(&r.join("docs/src/reference/committed-scenarios.md"));
    let mut missing = Vec::new();
    for dir in ["scenarios", "scenarios/elastic"] {
        for e in std::fs::read_dir(r.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let rel = p.strip_prefix(&r).unwrap().to_string_lossy().into_owned();
                let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
                // `{helios,philly-raw,pai}-sample.toml` names three files in one row.
                let braced = stem.strip_suffix("-sample").is_some_and(|s| {
                    table.contains(&format!("{s},")) || table.contains(&format!(",{s}"))
                });
                if !table.contains(&format!("`{rel}`")) && !braced {
                    missing.push(rel);
                }
            }
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "committed scenarios missing from docs/src/reference/committed-scenarios.md: {missing:?}"
    );
}

/// Repository paths named in backticks (`src/engine/mod.rs`, `scenarios/default.toml`,
/// `docs/cluster/`) that do not exist. Paths with placeholders (`<`, `*`, `{`, `…`, upper
/// case words such as `NAME`), generated folders and the walk-through's hypothetical file are
/// not paths of the tree.
fn missing_paths(page: &Path, root: &Path) -> Vec<String> {
    const ROOTS: [&str; 16] = [
        "src/",
        "tests/",
        "scenarios/",
        "policies/",
        "scheduler/",
        "extender/",
        "schemas/",
        "traces/",
        "examples/",
        ".ci/",
        "benches/",
        "python/",
        "docs/",
        "fuzz/",
        "reports/",
        "ARCHITECTURE.md",
    ];
    const NOT_IN_TREE: [&str; 6] = [
        "docs/book/",
        "fuzz/corpus",
        "fuzz/artifacts",
        "traces/public",
        "policies/src/placement/headroom.rs",
        "python/target",
    ];
    let text = read(page);
    let mut bad = Vec::new();
    for (n, line) in prose(&text) {
        for (i, chunk) in line.split('`').enumerate() {
            if i % 2 == 0 {
                continue;
            }
            let p = chunk.trim();
            let placeholder = p.contains(['<', '*', '{', '…', ' ', '$', '|'])
                || p.split(['/', '.', '-'])
                    .any(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
            if placeholder
                || !ROOTS.iter().any(|r| p.starts_with(r))
                || NOT_IN_TREE.iter().any(|x| p.starts_with(x))
            {
                continue;
            }
            let p = p
                .split("::")
                .next()
                .unwrap()
                .trim_end_matches([',', '.', ':']);
            // From the repository's root, or from the page's own folder or one above it (a
            // crate README names its crate's files as `src/wal.rs`).
            let found = page
                .ancestors()
                .skip(1)
                .take_while(|d| d.starts_with(root))
                .any(|d| d.join(p).exists());
            if !found {
                bad.push(format!("{}:{n}: `{p}` does not exist", page.display()));
            }
        }
    }
    bad
}

#[test]
fn every_path_the_docs_name_exists() {
    let r = repo();
    let bad: Vec<String> = pages().iter().flat_map(|p| missing_paths(p, &r)).collect();
    assert!(
        bad.is_empty(),
        "paths named in the docs:\n{}",
        bad.join("\n")
    );
}

/// The scenario reference generated from `schemas/scenario.schema.json` (which the schemas
/// test keeps equal to the Rust types): one section per table of the scenario file, in the
/// order a walk from the top reaches them, each with its keys, types, defaults and the
/// types' own doc comments.
mod scenario_reference {
    use std::collections::{BTreeMap, VecDeque};

    use serde_json::Value;

    /// The section anchor of a definition (its heading is its name).
    fn anchor(name: &str) -> String {
        super::slug(name)
    }

    fn def_name(r: &str) -> &str {
        r.trim_start_matches("#/$defs/")
    }

    /// Rustdoc's intra-doc links as plain code: `[`X`](crate::x::X)` and `[`X`]` become
    /// `` `X` `` (their targets are Rust paths, not pages of the book).
    fn unlink(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("[`") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let Some(j) = after.find("`]") else {
                out.push_str(&rest[i..]);
                return out;
            };
            out.push_str(&after[..j + 1]);
            rest = &after[j + 2..];
            // An explicit target: `(crate::…)` or `(Self::…)`, never a page.
            if rest.starts_with('(') {
                if let Some(k) = rest.find(')') {
                    if !rest[..k].contains("://") {
                        rest = &rest[k + 1..];
                    }
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// One line of text for a table cell: the first paragraph, `|` escaped.
    fn cell(s: &str) -> String {
        let first = s.split("\n\n").next().unwrap_or("");
        unlink(&first.split_whitespace().collect::<Vec<_>>().join(" ")).replace('|', "\\|")
    }

    /// A value as TOML-like code: strings quoted.
    fn code(v: &Value) -> String {
        format!("`{}`", v.to_string().replace('|', "\\|"))
    }

    /// The type of a schema, as text with links to the sections of named types.
    fn ty(s: &Value) -> String {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let n = def_name(r);
            return format!("[{n}](#{})", anchor(n));
        }
        if let Some(c) = s.get("const") {
            return code(c);
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array) {
            return e.iter().map(code).collect::<Vec<_>>().join(" \\| ");
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(vs) = s.get(key).and_then(Value::as_array) {
                let optional = vs
                    .iter()
                    .any(|v| v.get("type") == Some(&Value::from("null")));
                let parts: Vec<String> = vs
                    .iter()
                    .filter(|v| v.get("type") != Some(&Value::from("null")))
                    .map(ty)
                    .collect();
                let t = parts.join(" or ");
                return if optional {
                    format!("{t} (optional)")
                } else {
                    t
                };
            }
        }
        if s.as_bool() == Some(true) {
            return "any value".into();
        }
        match s.get("type") {
            Some(Value::Array(ts)) => {
                let optional = ts.iter().any(|t| t == "null");
                let mut one = s.clone();
                let t: Vec<String> = ts
                    .iter()
                    .filter(|t| *t != "null")
                    .map(|t| {
                        one["type"] = t.clone();
                        ty(&one)
                    })
                    .collect();
                let t = t.join(" or ");
                if optional {
                    format!("{t} (optional)")
                } else {
                    t
                }
            }
            Some(Value::String(t)) => match t.as_str() {
                "array" => match s.get("items") {
                    Some(i) => format!("array of {}", ty(i)),
                    None => "array".into(),
                },
                "object" => {
                    if let Some(p) = s.get("properties").and_then(Value::as_object) {
                        let keys: Vec<String> = p.keys().map(|k| format!("`{k}`")).collect();
                        format!("table ({})", keys.join(", "))
                    } else if let Some(ap) = s.get("additionalProperties").filter(|v| v.is_object())
                    {
                        format!("table of {}", ty(ap))
                    } else {
                        "table".into()
                    }
                }
                "integer" => "integer".into(),
                "number" => "number".into(),
                other => other.into(),
            },
            _ => "any value".into(),
        }
    }

    /// The definitions a schema names, in the order they appear.
    fn refs(s: &Value, out: &mut Vec<String>) {
        match s {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                    out.push(def_name(r).to_string());
                }
                for (k, v) in m {
                    if k != "$defs" {
                        refs(v, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    fn keys_table(s: &Value, out: &mut String) {
        let Some(props) = s.get("properties").and_then(Value::as_object) else {
            return;
        };
        let required: Vec<&str> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push_str("| key | type | default | meaning |\n|---|---|---|---|\n");
        for (k, p) in props {
            let default = match p.get("default") {
                Some(d) => code(d),
                None if required.contains(&k.as_str()) => "required".into(),
                None => "–".into(),
            };
            let desc = p.get("description").and_then(Value::as_str).unwrap_or("");
            out.push_str(&format!(
                "| `{k}` | {} | {default} | {} |\n",
                ty(p),
                cell(desc)
            ));
        }
        out.push('\n');
    }

    /// The Markdown of the reference.
    pub fn render(schema: &Value) -> String {
        let defs = schema["$defs"].as_object().expect("$defs");
        // Where each definition is first used: a walk from the top, table by table.
        let mut path_of: BTreeMap<String, String> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        let mut queue: VecDeque<(String, &Value)> = VecDeque::new();
        queue.push_back((String::new(), schema));
        while let Some((path, s)) = queue.pop_front() {
            let props: Vec<(String, &Value)> = match s.get("properties").and_then(Value::as_object)
            {
                Some(p) => p.iter().map(|(k, v)| (k.clone(), v)).collect(),
                None => Vec::new(),
            };
            let mut named: Vec<(String, String)> = Vec::new();
            for (k, p) in &props {
                let mut r = Vec::new();
                refs(p, &mut r);
                let under = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                named.extend(r.into_iter().map(|n| (n, under.clone())));
            }
            // Variants (oneOf/anyOf) name their definitions at the same path.
            if props.is_empty() {
                let mut r = Vec::new();
                refs(s, &mut r);
                named.extend(r.into_iter().map(|n| (n, path.clone())));
            }
            for (n, at) in named {
                if !path_of.contains_key(&n) {
                    path_of.insert(n.clone(), at.clone());
                    order.push(n.clone());
                    queue.push_back((at, &defs[&n]));
                }
            }
        }
        let mut out = String::new();
        out.push_str("### Scenario\n\nThe top level of a scenario file.\n\n");
        keys_table(schema, &mut out);
        for n in &order {
            let s = &defs[n];
            out.push_str(&format!("### {n}\n\n"));
            if let Some(d) = s.get("description").and_then(Value::as_str) {
                let d = unlink(&d.split_whitespace().collect::<Vec<_>>().join(" "));
                out.push_str(&format!("{d}\n\n"));
            }
            let at = &path_of[n];
            if !at.is_empty() {
                out.push_str(&format!("Used at `{at}`.\n\n"));
            }
            keys_table(s, &mut out);
            for key in ["oneOf", "anyOf"] {
                let Some(vs) = s.get(key).and_then(Value::as_array) else {
                    continue;
                };
                if vs.iter().all(|v| v.get("const").is_some()) {
                    out.push_str("| value | meaning |\n|---|---|\n");
                    for v in vs {
                        let d = v.get("description").and_then(Value::as_str).unwrap_or("");
                        out.push_str(&format!("| {} | {} |\n", code(&v["const"]), cell(d)));
                    }
                } else {
                    out.push_str("One of:\n\n");
                    for v in vs {
                        let d = v.get("description").and_then(Value::as_str).unwrap_or("");
                        let keys = match v.get("properties").and_then(Value::as_object) {
                            Some(p) => p
                                .iter()
                                .map(|(k, pv)| format!("`{k}`: {}", ty(pv)))
                                .collect::<Vec<_>>()
                                .join(", "),
                            None => ty(v),
                        };
                        let d = cell(d);
                        if d.is_empty() {
                            out.push_str(&format!("- {keys}\n"));
                        } else {
                            out.push_str(&format!("- {keys} — {d}\n"));
                        }
                    }
                }
                out.push('\n');
            }
        }
        out
    }
}

const GENERATED_BEGIN: &str = "<!-- BEGIN generated from schemas/scenario.schema.json by tests/integration/docs.rs; FLEETSIM_UPDATE_DOCS=1 rewrites it -->";
const GENERATED_END: &str = "<!-- END generated -->";

/// `docs/src/reference/scenario.md` holds the reference generated from the committed JSON
/// Schema between two markers; a stale section fails here (`FLEETSIM_UPDATE_DOCS=1 cargo
/// test -p fleetsim --test integration docs::` rewrites it).
#[test]
fn the_scenario_reference_is_generated_from_the_schema() {
    let r = repo();
    let schema: serde_json::Value =
        serde_json::from_str(&read(&r.join("schemas/scenario.schema.json"))).unwrap();
    let want = scenario_reference::render(&schema);
    let page = r.join("docs/src/reference/scenario.md");
    let text = read(&page);
    let (before, rest) = text
        .split_once(GENERATED_BEGIN)
        .expect("scenario.md has the generated section's begin marker");
    let (got, after) = rest
        .split_once(GENERATED_END)
        .expect("scenario.md has the generated section's end marker");
    let want_section = format!("\n\n{want}");
    if got != want_section {
        if std::env::var_os("FLEETSIM_UPDATE_DOCS").is_some() {
            std::fs::write(
                &page,
                format!("{before}{GENERATED_BEGIN}{want_section}{GENERATED_END}{after}"),
            )
            .unwrap();
        } else {
            panic!(
                "docs/src/reference/scenario.md is stale against schemas/scenario.schema.json: \
                 FLEETSIM_UPDATE_DOCS=1 cargo test -p fleetsim --test integration docs:: rewrites it"
            );
        }
    }
    // Every table of the schema has its section.
    for name in schema["$defs"].as_object().unwrap().keys() {
        assert!(
            want.contains(&format!("### {name}\n")),
            "the generated reference has no section for `{name}`"
        );
    }
}
