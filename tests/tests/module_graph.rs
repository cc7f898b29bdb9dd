//! The kernel's module graph, checked on the host (no QEMU): which top-level module of
//! kernel/src names which other one through a `crate::` path (in a `use` line, a `use crate::{..}`
//! group or inline), a `super::` path that climbs to the crate root, or an exported macro.
//!
//! - No cycle may exist between top-level modules other than the members of `KNOWN_CYCLE`, and
//!   every member of `KNOWN_CYCLE` must still be on a cycle: the list only shrinks.
//! - README.md's block between `<!-- module-map:begin -->` and `<!-- module-map:end -->` is the
//!   map this test renders, by floor (a module's floor is one above the highest floor it imports;
//!   a cycle is one node). `SVELT_BLESS=1 cargo test -p svelt-tests --test module_graph`
//!   rewrites the block.
//!
//! A top-level module is a file kernel/src/X.rs or a folder kernel/src/X/. The roots (`ROOTS`)
//! may import anything and are listed apart; nothing may import a root.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Modules allowed on a cycle: none. (The task/process circle of twelve modules was cut apart
/// into the task core, the POSIX process layer and the file, terminal and procfs layers above
/// and below it; the list stays, empty, so that the check and its tests read the same way.)
const KNOWN_CYCLE: &[&str] = &[];

/// Modules that start things (the boot entry and the exception entries): they may import any
/// module, and no module imports them.
const ROOTS: &[&str] = &["main", "entry"];

const BEGIN: &str = "<!-- module-map:begin -->";
const END: &str = "<!-- module-map:end -->";

/// Where one module names another: file (relative to kernel/src) and line.
type Site = (String, usize);
/// from -> to -> the places behind that edge.
type Graph = BTreeMap<String, BTreeMap<String, Vec<Site>>>;

// ---------------------------------------------------------------------------------------------
// Reading Rust source: a token stream without comments, strings or character literals.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Bang,
    Other,
}

fn lex(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    // Skips a quoted string whose opening quote is at `i`; returns the index after it.
    let skip_str = |mut i: usize, line: &mut usize| {
        i += 1;
        while i < c.len() && c[i] != '"' {
            if c[i] == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    // Skips a raw string r#"..."# whose first `#` or quote is at `i`.
    let skip_raw = |mut i: usize, line: &mut usize| {
        let mut hashes = 0;
        while at(i) == '#' {
            hashes += 1;
            i += 1;
        }
        i += 1; // the opening quote
        while i < c.len() {
            if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                return i + 1 + hashes;
            }
            if c[i] == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_str(i, &mut line);
        } else if ch == '\'' {
            // A character literal ('a', '\n', '"') or a lifetime ('a, 'static).
            if at(i + 1) == '\\' {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            match (word.as_str(), at(i)) {
                ("r" | "br" | "cr", '"') => i = skip_raw(i, &mut line),
                ("r" | "br" | "cr", '#') if at(i + 1) == '"' || at(i + 1) == '#' => {
                    i = skip_raw(i, &mut line)
                }
                ("r", '#') => {} // a raw identifier follows
                ("b" | "c", '"') => i = skip_str(i, &mut line),
                ("b", '\'') => {
                    i += 1;
                    if at(i) == '\\' {
                        i += 1;
                    }
                    i += 1;
                    while i < c.len() && c[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                }
                _ => out.push((Tok::Ident(word), line)),
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Other, line));
        } else {
            let t = match ch {
                ':' if at(i + 1) == ':' => {
                    i += 1;
                    Tok::PathSep
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                '!' => Tok::Bang,
                _ => Tok::Other,
            };
            out.push((t, line));
            i += 1;
        }
    }
    out
}

fn is_ident(t: Option<&(Tok, usize)>, s: &str) -> bool {
    matches!(t, Some((Tok::Ident(w), _)) if w == s)
}

/// The macros a file exports at the crate root (`#[macro_export] macro_rules! name`).
fn exported_macros(toks: &[(Tok, usize)]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, (t, _)) in toks.iter().enumerate() {
        if *t == Tok::Ident("macro_rules".into())
            && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Bang)
            && toks[i.saturating_sub(8)..i]
                .iter()
                .any(|t| t.0 == Tok::Ident("macro_export".into()))
        {
            if let Some((Tok::Ident(name), _)) = toks.get(i + 2) {
                out.push(name.clone());
            }
        }
    }
    out
}

/// The names (with line) right below the crate root that a file's paths reach: `crate::a`,
/// `crate::{a, b::c}` (a and b), `super::..::a` where the supers climb to the root, and bare
/// uses of the `macros`. `file_depth` is how deep the file's module sits below the root
/// (kernel/src/X.rs and kernel/src/X/mod.rs: 1; kernel/src/X/y.rs: 2).
fn root_names(toks: &[(Tok, usize)], file_depth: usize, macros: &[String]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut inline_mods: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (t, line) = &toks[i];
        let after_sep = i > 0 && toks[i - 1].0 == Tok::PathSep;
        match t {
            Tok::Open => {
                depth += 1;
                if i >= 2 && is_ident(toks.get(i - 2), "mod") {
                    inline_mods.push(depth);
                }
            }
            Tok::Close => {
                if inline_mods.last() == Some(&depth) {
                    inline_mods.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(w) if !after_sep && (w == "crate" || w == "super") => {
                // Climb: count the leading `super::`s, or take `crate::` as the root itself.
                let mut j = i;
                let mut ups = 0;
                let at_root = if w == "crate" {
                    j += 1;
                    true
                } else {
                    while is_ident(toks.get(j), "super")
                        && toks.get(j + 1).map(|t| &t.0) == Some(&Tok::PathSep)
                    {
                        ups += 1;
                        j += 2;
                    }
                    j -= 1;
                    ups == file_depth + inline_mods.len()
                };
                if at_root && toks.get(j).map(|t| &t.0) == Some(&Tok::PathSep) {
                    match toks.get(j + 1) {
                        Some((Tok::Ident(name), _)) if name != "self" => {
                            out.push((name.clone(), *line))
                        }
                        Some((Tok::Open, _)) => {
                            // A group: the first name of each element at its top level.
                            let mut k = j + 2;
                            let mut d = 1;
                            let mut first = true;
                            while k < toks.len() && d > 0 {
                                match &toks[k].0 {
                                    Tok::Open => d += 1,
                                    Tok::Close => d -= 1,
                                    Tok::Comma if d == 1 => first = true,
                                    Tok::Ident(n) if d == 1 && first => {
                                        if n != "self" {
                                            out.push((n.clone(), toks[k].1));
                                        }
                                        first = false;
                                    }
                                    _ => {}
                                }
                                k += 1;
                            }
                        }
                        _ => {}
                    }
                }
            }
            Tok::Ident(w)
                if !after_sep
                    && macros.contains(w)
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Bang) =>
            {
                out.push((w.clone(), *line));
            }
            _ => {}
        }
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Building the graph of kernel/src.

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules of `src` and the graph of their references.
fn kernel_graph(src: &Path) -> (BTreeSet<String>, Graph) {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let mut modules = BTreeSet::new();
    let mut parsed = Vec::new();
    let mut macros: BTreeMap<String, String> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let top = parts[0].trim_end_matches(".rs").to_string();
        let last = parts.last().unwrap();
        let depth = parts.len() - usize::from(last == "mod.rs");
        modules.insert(top.clone());
        let toks = lex(&std::fs::read_to_string(f).unwrap());
        for m in exported_macros(&toks) {
            macros.insert(m, top.clone());
        }
        parsed.push((rel.to_string_lossy().into_owned(), top, depth, toks));
    }
    let macro_names: Vec<String> = macros.keys().cloned().collect();
    let mut g = Graph::new();
    for (rel, top, depth, toks) in parsed {
        g.entry(top.clone()).or_default();
        for (name, line) in root_names(&toks, depth, &macro_names) {
            // Items declared in main.rs itself belong to the root `main`.
            let to = if modules.contains(&name) {
                name
            } else if let Some(m) = macros.get(&name) {
                m.clone()
            } else {
                "main".to_string()
            };
            if to != top {
                g.entry(top.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .push((rel.clone(), line));
            }
        }
    }
    (modules, g)
}

// ---------------------------------------------------------------------------------------------
// Strongly connected components (Tarjan), cycles and floors.

/// The strongly connected components of `g` without the roots' outgoing edges, each sorted;
/// in reverse topological order (a component comes after every component it imports).
fn components(g: &Graph, roots: &[&str]) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        roots: &'a [&'a str],
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> T<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            let succ: Vec<&'a str> = if self.roots.contains(&v) {
                Vec::new()
            } else {
                self.g
                    .get(v)
                    .map(|e| e.keys().map(String::as_str).collect())
                    .unwrap_or_default()
            };
            for w in succ {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                comp.sort();
                self.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        roots,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    let all: BTreeSet<&str> = g
        .iter()
        .flat_map(|(k, e)| std::iter::once(k.as_str()).chain(e.keys().map(String::as_str)))
        .collect();
    for v in all {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

/// A shortest cycle through `m` inside `within`, as the list of its modules.
fn shortest_cycle(g: &Graph, m: &str, within: &[String]) -> Vec<String> {
    let mut prev: BTreeMap<String, String> = BTreeMap::new();
    let mut q = VecDeque::from([m.to_string()]);
    while let Some(v) = q.pop_front() {
        for w in g.get(&v).into_iter().flat_map(|e| e.keys()) {
            if !within.contains(w) {
                continue;
            }
            if w == m {
                let mut path = vec![v.clone()];
                let mut at = v.clone();
                while at != m {
                    at = prev[&at].clone();
                    path.push(at.clone());
                }
                path.reverse();
                return path;
            }
            if !prev.contains_key(w) {
                prev.insert(w.clone(), v.clone());
                q.push_back(w.clone());
            }
        }
    }
    vec![m.to_string()]
}

fn describe_edge(g: &Graph, a: &str, b: &str, out: &mut String) {
    let sites = &g[a][b];
    let shown: Vec<String> = sites
        .iter()
        .take(4)
        .map(|(f, l)| format!("{f}:{l}"))
        .collect();
    let more = match sites.len() {
        n if n > 4 => format!(" (+{} more)", n - 4),
        _ => String::new(),
    };
    let _ = writeln!(out, "    {a} -> {b}: {}{more}", shown.join(", "));
}

/// What is wrong with the cycles of `g`, measured against `known` (empty when all is well).
fn check_cycles(g: &Graph, roots: &[&str], known: &[&str]) -> String {
    let mut report = String::new();
    let comps = components(g, roots);
    let cyclic: Vec<&Vec<String>> = comps.iter().filter(|c| c.len() > 1).collect();
    let mut on_cycle = BTreeSet::new();
    for c in &cyclic {
        on_cycle.extend(c.iter().map(String::as_str));
        let new: Vec<&String> = c.iter().filter(|m| !known.contains(&m.as_str())).collect();
        if new.is_empty() {
            continue;
        }
        let _ = writeln!(
            report,
            "a cycle holds modules that are not in KNOWN_CYCLE ({}); the whole cycle: {}",
            new.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "),
            c.join(" ")
        );
        for m in new {
            let path = shortest_cycle(g, m, c);
            let _ = writeln!(report, "  {} -> {m}", path.join(" -> "));
            for k in 0..path.len() {
                describe_edge(g, &path[k], &path[(k + 1) % path.len()], &mut report);
            }
        }
    }
    for m in known {
        if !on_cycle.contains(m) {
            let _ = writeln!(
                report,
                "{m} is no longer on a cycle: remove it from KNOWN_CYCLE (the debt shrank)"
            );
        }
    }
    for (from, edges) in g {
        for r in roots {
            if edges.contains_key(*r) {
                let _ = writeln!(report, "{from} imports the root {r}:");
                describe_edge(g, from, r, &mut report);
            }
        }
    }
    report
}

/// The map: roots first, then one line per floor from the top, each cycle in braces.
fn render_map(g: &Graph, roots: &[&str]) -> String {
    let comps = components(g, roots);
    let mut comp_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, c) in comps.iter().enumerate() {
        for m in c {
            comp_of.insert(m, i);
        }
    }
    // Reverse topological order: every import of a component has its floor already.
    let mut floor = vec![0usize; comps.len()];
    for (i, c) in comps.iter().enumerate() {
        if roots.contains(&c[0].as_str()) {
            continue;
        }
        for m in c {
            for to in g.get(m).into_iter().flat_map(|e| e.keys()) {
                let j = comp_of[to.as_str()];
                if j != i && !roots.contains(&to.as_str()) {
                    floor[i] = floor[i].max(floor[j] + 1);
                }
            }
        }
    }
    let mut by_floor: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, c) in comps.iter().enumerate() {
        if roots.contains(&c[0].as_str()) {
            continue;
        }
        let name = if c.len() > 1 {
            format!("{{{}}}", c.join(" "))
        } else {
            c[0].clone()
        };
        by_floor.entry(floor[i]).or_default().push(name);
    }
    let mut lines = vec![("roots".to_string(), {
        let mut r: Vec<String> = roots.iter().map(|s| s.to_string()).collect();
        r.sort();
        r
    })];
    for (f, mut names) in by_floor.into_iter().rev() {
        names.sort();
        lines.push((format!("floor {f}"), names));
    }
    let mut out = String::from("```text\n");
    for (label, names) in lines {
        let mut line = format!("{label:<9}");
        for n in names {
            for word in n.split(' ') {
                if line.len() + 1 + word.len() > 100 {
                    out.push_str(line.trim_end());
                    out.push('\n');
                    line = " ".repeat(9);
                }
                line.push(' ');
                line.push_str(word);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("```\n");
    out
}

// ---------------------------------------------------------------------------------------------
// The checks on the real kernel.

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn kernel_has_no_new_cycle() {
    let (modules, g) = kernel_graph(&repo().join("kernel/src"));
    for m in KNOWN_CYCLE.iter().chain(ROOTS) {
        assert!(modules.contains(*m), "{m} is not a top-level module");
    }
    let report = check_cycles(&g, ROOTS, KNOWN_CYCLE);
    assert!(
        report.is_empty(),
        "kernel/src's top-level modules:\n{report}"
    );
}

#[test]
fn readme_module_map_is_current() {
    let (_, g) = kernel_graph(&repo().join("kernel/src"));
    let map = render_map(&g, ROOTS);
    let path = repo().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (Some(b), Some(e)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("README.md has lost its {BEGIN} ... {END} block; the map belongs there:\n{map}");
    };
    let start = b + BEGIN.len() + 1;
    assert!(start <= e, "README.md: {END} comes before {BEGIN}");
    if std::env::var_os("SVELT_BLESS").is_some_and(|v| v == "1") {
        let new = format!("{}{map}{}", &readme[..start], &readme[e..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert!(
        readme[start..e] == map,
        "README.md's module map is out of date; SVELT_BLESS=1 cargo test -p svelt-tests \
         --test module_graph rewrites it. The map now:\n{map}"
    );
}

// ---------------------------------------------------------------------------------------------
// The parts on small made-up inputs.

fn graph(edges: &[(&str, &str)]) -> Graph {
    let mut g = Graph::new();
    for (a, b) in edges {
        g.entry(a.to_string()).or_default();
        g.entry(b.to_string()).or_default();
        g.get_mut(*a)
            .unwrap()
            .entry(b.to_string())
            .or_default()
            .push((format!("{a}.rs"), 1));
    }
    g
}

fn names(src: &str, depth: usize) -> Vec<String> {
    let macros = ["println".to_string()];
    root_names(&lex(src), depth, &macros)
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn paths_groups_super_and_macros_are_read() {
    let src = r#"
        use crate::a::b;
        use crate::{c, d::e, self, f::{g, h}};
        fn x() { crate::i::j(); let _ = super::k::l; }
        mod tests { use super::super::m; use super::*; }
        fn y() { println!("x"); other::println!(); }
    "#;
    assert_eq!(
        names(src, 1),
        ["a", "c", "d", "f", "i", "k", "m", "println"]
    );
    // One level deeper, a single `super` stays inside the module.
    assert_eq!(names("use super::x; use super::super::y;", 2), ["y"]);
}

#[test]
fn comments_strings_and_chars_are_not_read() {
    let src = r##"
        // use crate::a;
        /* crate::b /* nested crate::c */ crate::d */
        const S: &str = "crate::e \" crate::f";
        const R: &str = r#"crate::g " crate::h"#;
        const B: &[u8] = b"crate::i";
        const C: char = '"'; fn f<'a>(x: &'a u8) -> char { let _ = crate::j::k; '{' }
        /// crate::l in a doc comment
        use crate::m;
    "##;
    assert_eq!(names(src, 1), ["j", "m"]);
    let toks = lex("a\n/* \n */ b \"\n\" c");
    assert_eq!(toks.iter().map(|t| t.1).collect::<Vec<_>>(), [1, 3, 4]);
}

#[test]
fn tarjan_finds_the_cycles() {
    let g = graph(&[
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
        ("c", "d"),
        ("d", "e"),
        ("e", "d"),
    ]);
    let comps = components(&g, &[]);
    assert_eq!(comps, [vec!["d", "e"], vec!["a", "b", "c"]]);
    assert_eq!(shortest_cycle(&g, "b", &comps[1]), ["b", "c", "a"]);
}

#[test]
fn known_cycle_may_not_grow_shrink_or_gain_a_neighbour() {
    let base = [("a", "b"), ("b", "a"), ("b", "c"), ("main", "a")];
    assert_eq!(check_cycles(&graph(&base), &["main"], &["a", "b"]), "");
    // c joins the circle.
    let grown = [&base[..], &[("c", "a")]].concat();
    let r = check_cycles(&graph(&grown), &["main"], &["a", "b"]);
    assert!(r.contains("not in KNOWN_CYCLE (c)"), "{r}");
    assert!(r.contains("c -> a: c.rs:1"), "{r}");
    // A second cycle elsewhere.
    let other = [&base[..], &[("d", "e"), ("e", "d")]].concat();
    let r = check_cycles(&graph(&other), &["main"], &["a", "b"]);
    assert!(r.contains("(d e)"), "{r}");
    // The circle shrank: the list must follow.
    let r = check_cycles(&graph(&base), &["main"], &["a", "b", "c"]);
    assert!(r.contains("c is no longer on a cycle"), "{r}");
    // A module imports a root.
    let r = check_cycles(&graph(&[("main", "a"), ("a", "main")]), &["main"], &[]);
    assert!(r.contains("a imports the root main"), "{r}");
}

#[test]
fn map_is_by_floor_and_an_upward_edge_fails_the_check() {
    let g = graph(&[
        ("main", "time"),
        ("main", "syscall"),
        ("syscall", "task"),
        ("task", "sched"),
        ("sched", "task"),
        ("task", "time"),
        ("time", "arch"),
        ("sync", "arch"),
    ]);
    let want = "```text\n\
                roots     entry main\n\
                floor 3   syscall\n\
                floor 2   {sched task}\n\
                floor 1   sync time\n\
                floor 0   arch\n\
                ```\n";
    assert_eq!(render_map(&g, &["main", "entry"]), want);
    assert_eq!(check_cycles(&g, &["main"], &["sched", "task"]), "");
    // time, low in the building, reaches up to syscall: a cycle through time and syscall.
    let mut up = g.clone();
    up.get_mut("time")
        .unwrap()
        .insert("syscall".into(), vec![("time.rs".into(), 7)]);
    let r = check_cycles(&up, &["main"], &["sched", "task"]);
    assert!(r.contains("time -> syscall: time.rs:7"), "{r}");
    assert!(r.contains("syscall -> task"), "{r}");
}

#[test]
fn long_floors_wrap() {
    let edges: Vec<(String, String)> = (0..30)
        .map(|i| ("top".into(), format!("module{i:02}")))
        .collect();
    let edges: Vec<(&str, &str)> = edges
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let map = render_map(&graph(&edges), &[]);
    assert!(map.lines().all(|l| l.len() <= 100), "{map}");
    assert!(map.contains("\n          module"), "{map}");
}
