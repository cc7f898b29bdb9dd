//! `#!` scripts: how execve reads an interpreter line (Linux's binfmt_script rules).
//!
//! execve looks at the first [`BUF_SIZE`] bytes of the file (NUL-padded when the file is
//! shorter). A script names its interpreter after `#!`, optionally with one argument (everything
//! after the name and its following blanks, trailing blanks dropped, blanks inside kept). The
//! interpreter then runs with argv `[interpreter, argument?, script path, original argv[1..]]`.

/// Bytes of the file execve examines.
pub const BUF_SIZE: usize = 256;

/// How many scripts may stand between execve and a binary (a script whose interpreter is a
/// script...: Linux's exec loop allows five); one more is ELOOP.
pub const MAX_DEPTH: usize = 5;

/// The interpreter line of a `#!` script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shebang<'a> {
    pub interp: &'a [u8],
    pub arg: Option<&'a [u8]>,
}

fn blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// Reads `head` (the file's first bytes, at most [`BUF_SIZE`] used). `None`: not a script
/// (no `#!`). `Some(Err(()))`: a `#!` line execve refuses with ENOEXEC: no interpreter name, or
/// a name that does not end within the buffer (it would be truncated).
pub fn parse(head: &[u8]) -> Option<Result<Shebang<'_>, ()>> {
    let buf = &head[..head.len().min(BUF_SIZE)];
    if !buf.starts_with(b"#!") {
        return None;
    }
    // The line ends at a newline; without one the whole buffer is the line, but only if the
    // interpreter's name ends inside it (an argument may be cut short, a name may not). A file
    // shorter than the buffer counts as NUL-padded.
    let short = buf.len() < BUF_SIZE;
    let mut padded = false;
    let mut end = match buf.iter().position(|&c| c == b'\n') {
        Some(n) => n,
        None => {
            match buf[2..].iter().position(|&c| !blank(c)) {
                None if !short => return Some(Err(())),
                // Only blanks, then the padding: its first NUL is where the name starts.
                None => padded = true,
                Some(name) => {
                    if !short && !buf[2 + name..].iter().any(|&c| blank(c) || c == 0) {
                        return Some(Err(()));
                    }
                }
            }
            buf.len()
        }
    };
    while end > 2 && blank(buf[end - 1]) {
        end -= 1;
    }
    let line = &buf[2..end];
    let start = line.iter().position(|&c| !blank(c)).unwrap_or(line.len());
    let rest = &line[start..];
    let name_len = rest
        .iter()
        .position(|&c| blank(c) || c == 0)
        .unwrap_or(rest.len());
    if name_len == 0 {
        // A NUL where the name starts names the empty path (which execve looks up as the
        // working directory: EACCES); only blanks to the end of the line is no interpreter at
        // all (ENOEXEC).
        if start < line.len() || padded {
            return Some(Ok(Shebang {
                interp: b"",
                arg: None,
            }));
        }
        return Some(Err(()));
    }
    let interp = &rest[..name_len];
    let after = &rest[name_len..];
    // An argument only follows a blank; a NUL ends the line as C strings end.
    let arg = if after.first().is_some_and(|&c| blank(c)) {
        let a = &after[after.iter().position(|&c| !blank(c)).unwrap_or(after.len())..];
        let a = &a[..a.iter().position(|&c| c == 0).unwrap_or(a.len())];
        (!a.is_empty()).then_some(a)
    } else {
        None
    };
    Some(Ok(Shebang { interp, arg }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok<'a>(interp: &'a str, arg: Option<&'a str>) -> Option<Result<Shebang<'a>, ()>> {
        Some(Ok(Shebang {
            interp: interp.as_bytes(),
            arg: arg.map(str::as_bytes),
        }))
    }

    #[test]
    fn interpreter_and_argument() {
        assert_eq!(parse(b"#!/bin/sh\necho hi\n"), ok("/bin/sh", None));
        assert_eq!(parse(b"#! /bin/sh -e\n"), ok("/bin/sh", Some("-e")));
        assert_eq!(
            parse(b"#!/usr/bin/env  python3 -u \t\nx"),
            ok("/usr/bin/env", Some("python3 -u"))
        );
        assert_eq!(parse(b"#!/bin/sh \t \n"), ok("/bin/sh", None));
        // No newline: a short file is the whole line.
        assert_eq!(parse(b"#!/bin/busybox sh"), ok("/bin/busybox", Some("sh")));
    }

    #[test]
    fn not_scripts_and_refusals() {
        assert_eq!(parse(b"\x7fELF"), None);
        assert_eq!(parse(b"#"), None);
        assert_eq!(parse(b"#!\n"), Some(Err(())));
        assert_eq!(parse(b"#!   \t\n/bin/sh"), Some(Err(())));
        // A name that fills the buffer without ending would be truncated: refused.
        let mut long = b"#!/".to_vec();
        long.resize(BUF_SIZE + 10, b'a');
        assert_eq!(parse(&long), Some(Err(())));
        // An argument may be truncated at the buffer's end.
        let mut arg = b"#!/bin/sh ".to_vec();
        arg.resize(BUF_SIZE + 10, b'x');
        let got = parse(&arg).unwrap().unwrap();
        assert_eq!(got.interp, b"/bin/sh");
        assert_eq!(got.arg.unwrap().len(), BUF_SIZE - 10);
    }

    #[test]
    fn nul_ends_the_name_and_the_argument() {
        assert_eq!(parse(b"#!/bin/sh\0junk\n"), ok("/bin/sh", None));
        // A NUL first (also the padding of a short file without a newline) is the empty name.
        assert_eq!(parse(b"#!\0/bin/sh\n"), ok("", None));
        assert_eq!(parse(b"#!"), ok("", None));
        assert_eq!(parse(b"#! \t"), ok("", None));
        let mut blanks = b"#!".to_vec();
        blanks.resize(BUF_SIZE + 10, b' ');
        assert_eq!(parse(&blanks), Some(Err(())));
        assert_eq!(parse(b"#!/bin/sh -x\0y\n"), ok("/bin/sh", Some("-x")));
    }
}
