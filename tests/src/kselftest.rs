//! Linux's arm64 selftests (tools/testing/selftests/arm64) on Svelt and on Linux: an archive of
//! a selection built by tests/selftests/build.sh, how each program and each of its KTAP subtests
//! ended in a run of the runner (tests/selftests/runner.c), and the differences between the
//! two kernels' runs.
//!
//! A program's outcome is the runner's top-level line (exit 0 passes, exit 4 skips, any other
//! end fails); a subtest's is its nested `ok`/`not ok` line with kselftest's directive, which
//! kselftest.h writes either after the name (`ok 3 name # SKIP why`) or before it
//! (`ok 3 # SKIP name`).

use crate::{boot, build, parse_ktap, parse_result_line, root, Config, Initrd, Run};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What tests/selftests/build.sh packs.
#[derive(Clone, Copy, Debug)]
pub struct Selection<'a> {
    /// The archive's name: target/selftests/NAME.cpio.gz (one per selection, so test binaries
    /// with different selections do not repack each other's).
    pub name: &'a str,
    /// arm64 sub-directories (`fp signal abi gcs`), each built once and cached.
    pub subtargets: &'a str,
    /// Only these programs of upstream's list (space-separated); empty: all of them.
    pub only: &'a str,
    /// Programs upstream builds but does not list (TEST_GEN_PROGS_EXTENDED), run after them.
    pub extra: &'a str,
    /// The runner's limits for programs allowed longer than its 60 s ("NAME=SECONDS ...");
    /// empty: build.sh's default list.
    pub long: &'a str,
}

/// Builds the archive for `sel` (cached under target/selftests/; the first build on a machine
/// downloads Debian's 160 MB linux-source package). None, after saying why, when the package
/// cannot be fetched; any other failure panics.
pub fn archive(sel: &Selection) -> Option<PathBuf> {
    let t0 = Instant::now();
    let o = Command::new(root().join("tests/selftests/build.sh"))
        .env("SELFTESTS_NAME", sel.name)
        .env("SELFTESTS_SUBTARGETS", sel.subtargets)
        .env("SELFTESTS_ONLY", sel.only)
        .env("SELFTESTS_EXTRA", sel.extra)
        .env("SELFTESTS_SKIP", "")
        .envs((!sel.long.is_empty()).then_some(("SELFTESTS_LONG", sel.long)))
        .stdin(Stdio::null())
        .output()
        .expect("run tests/selftests/build.sh");
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        // build.sh says "(network?)" when a download fails; its progress lines ("fetching ...")
        // must not turn a build failure into a skip.
        if err.contains("network") || err.contains("Could not resolve") {
            eprintln!("SKIPPED: the selftest sources could not be fetched:\n{err}");
            return None;
        }
        panic!("tests/selftests/build.sh failed:\n{err}");
    }
    let out = String::from_utf8_lossy(&o.stdout);
    let path = PathBuf::from(out.lines().last().expect("archive path").trim());
    eprintln!(
        "{} ready in {:.1} s",
        path.display(),
        t0.elapsed().as_secs_f64()
    );
    Some(path)
}

/// How a program or a subtest ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    Pass,
    Skip,
    /// An expected failure (`# XFAIL`).
    Xfail,
    /// An expected failure that passed (`# XPASS`).
    Xpass,
    /// `not ok ... # error`.
    Error,
    Fail,
    /// Not reported at all in this run.
    Missing,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.pad(match self {
            Outcome::Pass => "pass",
            Outcome::Skip => "skip",
            Outcome::Xfail => "xfail",
            Outcome::Xpass => "xpass",
            Outcome::Error => "error",
            Outcome::Fail => "FAIL",
            Outcome::Missing => "missing",
        })
    }
}

/// One program's run.
#[derive(Clone, Debug)]
pub struct Program {
    pub outcome: Outcome,
    /// The runner's reason: `exit status 1`, `killed by signal 11 (...)`, `TIMEOUT 60 seconds`.
    pub why: String,
    /// Subtest name (a repeated name gets ` (2)`, ` (3)`...) → outcome.
    pub subtests: BTreeMap<String, Outcome>,
    /// What it printed, results and diagnostics, in order (without the nesting).
    pub log: Vec<String>,
    /// Subtest name → the index of its result line in `log`.
    pub at: BTreeMap<String, usize>,
}

impl Program {
    /// A program no run reported (yet).
    fn missing() -> Program {
        Program {
            outcome: Outcome::Missing,
            why: String::new(),
            subtests: BTreeMap::new(),
            log: vec![],
            at: BTreeMap::new(),
        }
    }
}

/// Program name (without the runner's `arm64:`) → its run.
pub type Outcomes = BTreeMap<String, Program>;

/// A subtest's name and outcome from its nested result line, as parse_ktap split it.
fn subtest(ok: bool, name: &str, skip: Option<&str>) -> (String, Outcome) {
    if skip.is_some() {
        return (name.to_string(), Outcome::Skip);
    }
    let directive = |d: &str| match d.split_whitespace().next() {
        Some(w) if w.eq_ignore_ascii_case("SKIP") => Some(Outcome::Skip),
        Some(w) if w.eq_ignore_ascii_case("XFAIL") => Some(Outcome::Xfail),
        Some(w) if w.eq_ignore_ascii_case("XPASS") => Some(Outcome::Xpass),
        Some(w) if w.eq_ignore_ascii_case("error") => Some(Outcome::Error),
        _ => None,
    };
    let plain = if ok { Outcome::Pass } else { Outcome::Fail };
    // `# DIRECTIVE name` (ksft_test_result_skip and friends).
    if let Some(rest) = name.strip_prefix("# ") {
        if let Some(o) = directive(rest) {
            let tail = rest.split_once(' ').map_or("", |(_, t)| t);
            return (tail.trim().to_string(), if ok { o } else { Outcome::Error });
        }
    }
    // `name # DIRECTIVE reason` (ksft_test_result_code).
    if let Some((n, d)) = name.rsplit_once(" # ") {
        if let Some(o) = directive(d) {
            return (n.trim().to_string(), if ok { o } else { Outcome::Error });
        }
    }
    (name.to_string(), plain)
}

/// How every program and subtest of a runner's output ended: its top level at column 0, each
/// program's output nested four spaces deep before its result line (as parse_ktap reads it).
pub fn outcomes(output: &str) -> Outcomes {
    let mut all = Outcomes::new();
    let mut cur = Program::missing();
    let mut seen = BTreeMap::<String, usize>::new();
    for line in output.lines().map(str::trim_end) {
        if let Some(nested) = line.strip_prefix("    ") {
            if let Some((ok, sub, skip)) = parse_result_line(nested) {
                let (sub, o) = subtest(ok, &sub, skip.as_deref());
                let n = seen.entry(sub.clone()).or_default();
                *n += 1;
                let key = if *n == 1 { sub } else { format!("{sub} ({n})") };
                cur.at.insert(key.clone(), cur.log.len());
                cur.subtests.insert(key, o);
            }
            cur.log.push(nested.to_string());
        } else if let Some((ok, name, skip)) = parse_result_line(line) {
            let (name, why) = name.split_once(" # ").unwrap_or((&name, ""));
            let name = name.strip_prefix("arm64:").unwrap_or(name).to_string();
            let mut p = std::mem::replace(&mut cur, Program::missing());
            p.outcome = match (ok, skip) {
                (false, _) => Outcome::Fail,
                (true, Some(_)) => Outcome::Skip,
                (true, None) => Outcome::Pass,
            };
            p.why = why.to_string();
            all.insert(name, p);
            seen.clear();
        }
    }
    all
}

/// One program or subtest that ended differently on the two kernels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub program: String,
    /// None: the program's own outcome.
    pub subtest: Option<String>,
    pub svelt: Outcome,
    pub linux: Outcome,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let what = match &self.subtest {
            Some(s) => format!("{}: {s}", self.program),
            None => self.program.clone(),
        };
        write!(f, "{what}: Svelt {}, Linux {}", self.svelt, self.linux)
    }
}

/// Every program and subtest whose outcome differs, including those only one run reported.
pub fn differences(svelt: &Outcomes, linux: &Outcomes) -> Vec<Difference> {
    let mut out = Vec::new();
    let missing = Program::missing();
    let programs: std::collections::BTreeSet<_> = svelt.keys().chain(linux.keys()).collect();
    for prog in programs {
        let s = svelt.get(prog).unwrap_or(&missing);
        let l = linux.get(prog).unwrap_or(&missing);
        if s.outcome != l.outcome {
            out.push(Difference {
                program: prog.clone(),
                subtest: None,
                svelt: s.outcome,
                linux: l.outcome,
            });
        }
        let subs: std::collections::BTreeSet<_> =
            s.subtests.keys().chain(l.subtests.keys()).collect();
        for sub in subs {
            let get = |p: &Program| p.subtests.get(sub).copied().unwrap_or(Outcome::Missing);
            if get(s) != get(l) {
                out.push(Difference {
                    program: prog.clone(),
                    subtest: Some(sub.clone()),
                    svelt: get(s),
                    linux: get(l),
                });
            }
        }
    }
    out
}

/// A difference between Svelt and Linux that is known to exist today, in one configuration.
#[derive(Clone, Copy, Debug)]
pub struct Known {
    /// The configuration's name, as the test calls it.
    pub config: &'static str,
    pub program: &'static str,
    /// The subtests it covers: exact names, or a prefix followed by `*`. Empty: the program's
    /// own outcome, and the subtests one side did not report because the program did not run
    /// them there (it skipped, or stopped).
    pub subtests: &'static [&'static str],
    pub svelt: Outcome,
    pub linux: Outcome,
    /// Why, and the issue it belongs to.
    pub why: &'static str,
}

impl Known {
    fn pattern_matches(pattern: &str, name: &str) -> bool {
        match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern,
        }
    }

    fn covers(&self, config: &str, d: &Difference) -> bool {
        if self.config != config || self.program != d.program {
            return false;
        }
        match &d.subtest {
            None => self.subtests.is_empty() && (d.svelt, d.linux) == (self.svelt, self.linux),
            Some(_) if self.subtests.is_empty() => {
                d.svelt == Outcome::Missing || d.linux == Outcome::Missing
            }
            Some(name) => {
                (d.svelt, d.linux) == (self.svelt, self.linux)
                    && self
                        .subtests
                        .iter()
                        .any(|p| Known::pattern_matches(p, name))
            }
        }
    }

    /// The parts of this entry no difference of `diffs` matches any more.
    fn gone(&self, config: &str, diffs: &[Difference]) -> Vec<String> {
        let here: Vec<_> = diffs.iter().filter(|d| self.covers(config, d)).collect();
        if self.subtests.is_empty() {
            if here.iter().any(|d| d.subtest.is_none()) {
                return vec![];
            }
            return vec![format!(
                "{}: Svelt {}, Linux {}",
                self.program, self.svelt, self.linux
            )];
        }
        self.subtests
            .iter()
            .filter(|p| {
                !here.iter().any(|d| {
                    d.subtest
                        .as_deref()
                        .is_some_and(|n| Known::pattern_matches(p, n))
                })
            })
            .map(|p| {
                format!(
                    "{}: {p}: Svelt {}, Linux {}",
                    self.program, self.svelt, self.linux
                )
            })
            .collect()
    }
}

/// A configuration's differences sorted out against the known ones.
#[derive(Debug, Default)]
pub struct Sorted<'a> {
    /// Differences no entry covers: each is a regression, or a new entry for the list.
    pub unexpected: Vec<&'a Difference>,
    /// Differences an entry covers.
    pub known: Vec<&'a Difference>,
    /// Entries (or the subtests of an entry) that no longer differ: fixed, so to be removed.
    pub gone: Vec<String>,
}

/// Sorts `config`'s differences into the known ones and the others, and finds the known
/// ones that are gone.
pub fn sort_out<'a>(config: &str, diffs: &'a [Difference], known: &[Known]) -> Sorted<'a> {
    let mut s = Sorted::default();
    for d in diffs {
        if known.iter().any(|k| k.covers(config, d)) {
            s.known.push(d);
        } else {
            s.unexpected.push(d);
        }
    }
    for k in known.iter().filter(|k| k.config == config) {
        s.gone.extend(k.gone(config, diffs));
    }
    s
}

/// One line per program: how it ended on each kernel and how many of its subtests passed,
/// skipped or ended otherwise, marked with `*` where anything differs; the runner's reason
/// for a program that failed follows.
pub fn table(svelt: &Outcomes, linux: &Outcomes) -> String {
    let cell = |p: Option<&Program>| match p {
        None => format!("{:7} {:>4} {:>4} {:>5}", Outcome::Missing, "", "", ""),
        Some(p) => {
            let n = |o| p.subtests.values().filter(|v| **v == o).count();
            let (pass, skip) = (n(Outcome::Pass), n(Outcome::Skip));
            let other = p.subtests.len() - pass - skip;
            format!("{:7} {pass:4} {skip:4} {other:5}", p.outcome)
        }
    };
    let mut out = format!(
        " {:36} {:23} | {}\n {:36} {:7} {:>4} {:>4} {:>5} | {:7} {:>4} {:>4} {:>5}\n",
        "", "Svelt", "Linux", "program", "", "pass", "skip", "other", "", "pass", "skip", "other"
    );
    let programs: std::collections::BTreeSet<_> = svelt.keys().chain(linux.keys()).collect();
    for prog in programs {
        let (s, l) = (svelt.get(prog), linux.get(prog));
        let same = match (s, l) {
            (Some(s), Some(l)) => s.outcome == l.outcome && s.subtests == l.subtests,
            _ => false,
        };
        let mark = if same { ' ' } else { '*' };
        out += &format!("{mark}{prog:36} {} | {}", cell(s), cell(l));
        for (kernel, p) in [("Svelt", s), ("Linux", l)] {
            if let Some(p) = p.filter(|p| !p.why.is_empty()) {
                out += &format!("  {kernel}: {}", p.why);
            }
        }
        out += "\n";
    }
    out
}

/// The QEMU configuration's boot of a selftests archive, on Svelt or on Linux, with the
/// runner's own checks: no kernel panic, no time-out, the runner reached its end line having
/// run its whole list. None when Linux is asked for and cannot be fetched.
pub fn run(archive: &Path, cfg: &Config, linux: bool) -> Option<Run> {
    let cfg = Config {
        initrd: Initrd::File(archive.to_path_buf()),
        linux,
        ..cfg.clone()
    };
    if linux {
        if let Err(why) = build(&cfg) {
            if why.contains("network") {
                eprintln!("SKIPPED: Debian's Linux could not be fetched:\n{why}");
                return None;
            }
            panic!("set-up failed: {why}");
        }
    }
    let t0 = Instant::now();
    let r = boot(&cfg);
    let kernel = if linux { "Linux" } else { "Svelt" };
    eprintln!(
        "{kernel} ({cfg:?}): {:.1} s, status {:?}",
        t0.elapsed().as_secs_f64(),
        r.status
    );
    let ctx = || format!("{kernel}, config {cfg:?}\n--- output ---\n{}", r.output);
    assert_ne!(r.status, Some(101), "kernel panic; {}", ctx());
    assert!(r.status.is_some(), "time-out; {}", ctx());
    let k = parse_ktap(&r.output);
    assert_eq!(
        k.init_status,
        Some(0),
        "the runner did not reach its end; {}",
        ctx()
    );
    assert!(
        k.plan.is_some() && k.plan == Some(k.programs.len()),
        "the runner reported {} programs of its plan {:?}; {}",
        k.programs.len(),
        k.plan,
        ctx()
    );
    Some(r)
}

/// A time limit for one boot of the runner: its programs' limits are 60 s each (180 s for
/// fp-stress), but a whole run takes about a minute; a boot that takes this long is stuck.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(900);

/// The runs of one configuration on both kernels, and what differs between them.
pub struct Comparison {
    pub svelt: Outcomes,
    pub linux: Outcomes,
    pub differences: Vec<Difference>,
}

impl Comparison {
    /// Boots `archive` in `cfg` on Svelt, then on Linux; None when Linux cannot be fetched.
    pub fn boot(archive: &Path, cfg: &Config) -> Option<Comparison> {
        let svelt = outcomes(&run(archive, cfg, false)?.output);
        let linux = outcomes(&run(archive, cfg, true)?.output);
        let differences = differences(&svelt, &linux);
        Some(Comparison {
            svelt,
            linux,
            differences,
        })
    }

    /// A difference with what each program printed about it: the lines leading to the
    /// subtest's result (since the previous result), or the end of the program's output; at
    /// most `lines` from each kernel.
    pub fn explain(&self, d: &Difference, lines: usize) -> String {
        let mut out = format!("{d}\n");
        for (kernel, runs) in [("Svelt", &self.svelt), ("Linux", &self.linux)] {
            let Some(p) = runs.get(&d.program) else {
                continue;
            };
            let why = if p.why.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.why)
            };
            out += &format!("  {kernel}: program {}{why}\n", p.outcome);
            let end = match &d.subtest {
                None => p.log.len(),
                Some(sub) => match p.at.get(sub) {
                    Some(&i) => i + 1,
                    None => continue,
                },
            };
            // Back to the result before this one, or `lines` lines.
            let mut start = end.saturating_sub(lines);
            if let Some(prev) = p.at.values().filter(|&&i| i + 1 < end && i >= start).max() {
                start = prev + 1;
            }
            for l in &p.log[start..end] {
                out += &format!("    | {l}\n");
            }
        }
        out
    }

    /// Subtests that failed on Linux (the reference must be clean in QEMU's -cpu max).
    pub fn linux_failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (prog, p) in &self.linux {
            if !matches!(p.outcome, Outcome::Pass | Outcome::Skip) {
                out.push(format!("{prog} ({})", p.why));
            }
            for (sub, o) in &p.subtests {
                if matches!(o, Outcome::Fail | Outcome::Error | Outcome::Xpass) {
                    out.push(format!("{prog}: {sub}"));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_before_and_after_the_name() {
        assert_eq!(subtest(true, "a b", None), ("a b".into(), Outcome::Pass));
        assert_eq!(subtest(false, "a", None), ("a".into(), Outcome::Fail));
        assert_eq!(subtest(true, "a", Some("why")), ("a".into(), Outcome::Skip));
        assert_eq!(
            subtest(true, "# SKIP SVE VL 32", None),
            ("SVE VL 32".into(), Outcome::Skip)
        );
        assert_eq!(
            subtest(true, "# XFAIL odd case", None),
            ("odd case".into(), Outcome::Xfail)
        );
        assert_eq!(
            subtest(true, "odd case # XFAIL not here", None),
            ("odd case".into(), Outcome::Xfail)
        );
        assert_eq!(
            subtest(false, "# error x", None),
            ("x".into(), Outcome::Error)
        );
        assert_eq!(
            subtest(true, "weird # name", None),
            ("weird # name".into(), Outcome::Pass)
        );
    }

    #[test]
    fn compares_programs_and_subtests() {
        let run = |sub2: &str, prog3: &str| {
            format!(
                "TAP version 13\n1..3\n    ok 1 a\n    {sub2}\n    ok 3 a\nok 1 arm64:one\n\
                 ok 2 arm64:two # SKIP\n{prog3}\n# selftests: 3 programs\nsvelt-init: exit status 0\n"
            )
        };
        let s = outcomes(&run("not ok 2 b", "not ok 3 arm64:three # exit status 1"));
        let l = outcomes(&run("ok 2 # SKIP b", "ok 3 arm64:three"));
        assert_eq!(s["one"].subtests.len(), 3);
        assert_eq!(s["one"].subtests["a (2)"], Outcome::Pass);
        assert_eq!(s["two"].outcome, Outcome::Skip);
        assert_eq!(s["three"].why, "exit status 1");
        let d = differences(&s, &l);
        assert_eq!(
            d,
            [
                Difference {
                    program: "one".into(),
                    subtest: Some("b".into()),
                    svelt: Outcome::Fail,
                    linux: Outcome::Skip
                },
                Difference {
                    program: "three".into(),
                    subtest: None,
                    svelt: Outcome::Fail,
                    linux: Outcome::Pass
                },
            ]
        );
        assert!(differences(&l, &l).is_empty());
        let mut gone = l.clone();
        gone.remove("two");
        assert_eq!(differences(&l, &gone)[0].linux, Outcome::Missing);
        assert!(table(&s, &l).contains("*one"));
        let c = Comparison {
            svelt: s,
            linux: l,
            differences: d,
        };
        let e = c.explain(&c.differences[0], 5);
        assert!(e.contains("    | not ok 2 b\n"), "{e}");
        assert!(!e.contains("ok 1 a"), "{e}");
    }

    #[test]
    fn known_differences() {
        let d = |program: &str, subtest: Option<&str>, svelt, linux| Difference {
            program: program.into(),
            subtest: subtest.map(Into::into),
            svelt,
            linux,
        };
        use Outcome::*;
        let diffs = [
            d("gcs", None, Skip, Pass),
            d("gcs", Some("t1"), Missing, Pass),
            d("fp", Some("FPMR write, a"), Skip, Pass),
            d("fp", Some("FPMR write, b"), Skip, Pass),
            d("fp", Some("other"), Fail, Pass),
            d("hw", Some("sigill_X"), Skip, Pass),
        ];
        let known = [
            Known {
                config: "c",
                program: "gcs",
                subtests: &[],
                svelt: Skip,
                linux: Pass,
                why: "",
            },
            Known {
                config: "c",
                program: "fp",
                subtests: &["FPMR write*"],
                svelt: Skip,
                linux: Pass,
                why: "",
            },
            Known {
                config: "c",
                program: "hw",
                subtests: &["sigill_X", "sigill_Y"],
                svelt: Skip,
                linux: Pass,
                why: "",
            },
            Known {
                config: "c",
                program: "gone",
                subtests: &[],
                svelt: Fail,
                linux: Pass,
                why: "",
            },
            Known {
                config: "other config",
                program: "fp",
                subtests: &["other"],
                svelt: Fail,
                linux: Pass,
                why: "",
            },
        ];
        let s = sort_out("c", &diffs, &known);
        assert_eq!(s.unexpected, [&diffs[4]]);
        assert_eq!(s.known.len(), 5);
        assert_eq!(
            s.gone,
            [
                "hw: sigill_Y: Svelt skip, Linux pass",
                "gone: Svelt FAIL, Linux pass"
            ]
        );
        // A subtest that fails where the program's entry expects it not to run is not covered.
        let failed = [d("gcs", Some("t1"), Fail, Pass)];
        let s = sort_out("c", &failed, &known[..1]);
        assert_eq!(s.unexpected.len(), 1);
        assert_eq!(s.gone.len(), 1);
    }
}
