//! KTAP output, as the kernel's selftests print it:
//!
//! ```text
//! TAP version 13
//! 1..3
//! ok 1 first
//! not ok 2 second
//! # why it failed
//! ok 3 third # SKIP reason
//! # Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0
//! ```
//!
//! A program lists its tests as `(name, fn)` pairs and calls [`run`]; the exit status is nonzero
//! iff a test failed.

use alloc::string::String;

use crate::println;

/// A test's result: `Err(message)` fails it; [`skip`] skips it.
pub type TestResult = Result<(), String>;
pub type Test = (&'static str, fn() -> TestResult);

const SKIP_PREFIX: &str = "\u{1}SKIP:";

/// Returned by a test that cannot run here; the reason is printed after `# SKIP`.
pub fn skip(why: &str) -> TestResult {
    Err(alloc::format!("{SKIP_PREFIX}{why}"))
}

/// Whether a failed [`TestResult`]'s message is a [`skip`].
pub fn is_skip(m: &str) -> bool {
    m.starts_with(SKIP_PREFIX)
}

#[derive(Default, Clone, Copy, Debug)]
pub struct Totals {
    pub pass: u32,
    pub fail: u32,
    pub skip: u32,
}

impl Totals {
    pub fn print(&self) {
        println!(
            "# Totals: pass:{} fail:{} xfail:0 xpass:0 skip:{} error:0",
            self.pass, self.fail, self.skip
        );
    }
}

pub fn header(count: usize) {
    println!("TAP version 13");
    println!("1..{count}");
}

/// Prints the result line for test `n` and counts it.
pub fn report(totals: &mut Totals, n: usize, name: &str, r: &TestResult) {
    match r {
        Ok(()) => {
            totals.pass += 1;
            println!("ok {n} {name}");
        }
        Err(m) if is_skip(m) => {
            totals.skip += 1;
            println!("ok {n} {name} # SKIP {}", &m[SKIP_PREFIX.len()..]);
        }
        Err(m) => {
            totals.fail += 1;
            for line in m.lines() {
                println!("# {line}");
            }
            println!("not ok {n} {name}");
        }
    }
}

/// A child process's exit status for its test result: 0, or 1 after printing the message as
/// `# who: line` diagnostics.
pub fn child_status(who: &str, r: TestResult) -> i32 {
    match r {
        Ok(()) => 0,
        Err(m) => {
            for line in m.lines() {
                println!("# {who}: {line}");
            }
            1
        }
    }
}

/// Runs `tests` in order and returns the exit status (1 if any failed).
pub fn run(tests: &[Test]) -> i32 {
    header(tests.len());
    let mut totals = Totals::default();
    for (i, (name, f)) in tests.iter().enumerate() {
        let r = f();
        report(&mut totals, i + 1, name, &r);
    }
    totals.print();
    i32::from(totals.fail > 0)
}
