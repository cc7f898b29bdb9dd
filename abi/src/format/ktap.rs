//! Counting a KTAP report's test cases, for the one-line summary a self-checking boot ends with
//! (`svelt-selfcheck: N passed, F failed, S skipped`).
//!
//! The test init prints one top-level result per program, each program's own KTAP nested
//! beneath it. A case is a program's nested result (`ok`, `ok ... # SKIP`, `not ok`); a program
//! with no nested results counts as one case by its own result; a program that failed although
//! none of its nested results did (a crash, a timeout, a bad exit status) adds one failure. So
//! F is 0 exactly when every program and every nested test passed or skipped.

/// A result line's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    Skip,
}

/// The verdict of a KTAP result line (`ok N name`, `not ok N name`, `ok N name # SKIP why`) at
/// the start of `line`; `None` for anything else (diagnostics, plans, nested lines).
pub fn result_line(line: &str) -> Option<Verdict> {
    let (ok, rest) = match line.strip_prefix("ok ") {
        Some(r) => (true, r),
        None => (false, line.strip_prefix("not ok ")?),
    };
    let num = rest.split(' ').next().unwrap_or("");
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(match ok {
        false => Verdict::Fail,
        true if rest.contains(" # SKIP") => Verdict::Skip,
        true => Verdict::Pass,
    })
}

/// Counts of test cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    /// The current program's nested results so far, and whether one of them failed.
    nested: u32,
    nested_failed: bool,
}

impl Tally {
    fn count(&mut self, v: Verdict) {
        match v {
            Verdict::Pass => self.passed += 1,
            Verdict::Fail => self.failed += 1,
            Verdict::Skip => self.skipped += 1,
        }
    }

    /// One line of the running program's own output (before the init indents it): its
    /// top-level results are the cases.
    pub fn program_line(&mut self, line: &str) {
        if let Some(v) = result_line(line) {
            self.count(v);
            self.nested += 1;
            self.nested_failed |= v == Verdict::Fail;
        }
    }

    /// The program's own result, once it has ended.
    pub fn program_done(&mut self, v: Verdict) {
        if self.nested == 0 || (v == Verdict::Fail && !self.nested_failed) {
            self.count(v);
        }
        self.nested = 0;
        self.nested_failed = false;
    }
}

impl core::fmt::Display for Tally {
    /// The summary line (without a newline).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "svelt-selfcheck: {} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn result_lines() {
        assert_eq!(result_line("ok 1 a"), Some(Verdict::Pass));
        assert_eq!(result_line("ok 12 a b c"), Some(Verdict::Pass));
        assert_eq!(result_line("not ok 2 b"), Some(Verdict::Fail));
        assert_eq!(result_line("ok 3 c # SKIP no SME"), Some(Verdict::Skip));
        assert_eq!(result_line("ok 3"), Some(Verdict::Pass));
        for other in [
            "# ok 1 a",
            "    ok 1 a",
            "ok x a",
            "ok  1 a",
            "1..3",
            "",
            "ok",
            "okay 1",
        ] {
            assert_eq!(result_line(other), None, "{other:?}");
        }
    }

    #[test]
    fn counts_nested_cases_and_unexplained_failures() {
        let mut t = Tally::default();
        // A program with three nested cases: pass, skip, pass; the program passed.
        for l in [
            "TAP version 13",
            "1..3",
            "ok 1 a",
            "ok 2 b # SKIP why",
            "# diag",
            "ok 3 c",
        ] {
            t.program_line(l);
        }
        t.program_done(Verdict::Pass);
        // Nested lines two deep are the program's children's: not counted.
        t.program_line("    ok 1 inner");
        t.program_line("not ok 1 x");
        t.program_done(Verdict::Fail);
        // A crash after one passing case: the program's failure counts once.
        t.program_line("ok 1 y");
        t.program_done(Verdict::Fail);
        // No nested results at all: the program's own result counts.
        t.program_done(Verdict::Pass);
        t.program_done(Verdict::Skip);
        assert_eq!((t.passed, t.failed, t.skipped), (4, 2, 2));
        assert_eq!(
            t.to_string(),
            "svelt-selfcheck: 4 passed, 2 failed, 2 skipped"
        );
    }
}
