//! Path-name rules: length limits, splitting into components, lexical normalisation against a
//! working directory, and the parent/last split that create and unlink calls need.
//!
//! Lexical ".." handling is only right where no symlink is involved: Linux resolves ".."
//! against the directory actually reached. A resolver that follows symlinks should walk
//! `components` itself and use `normalize` only for paths it knows are symlink-free.

use crate::uapi::errno::{Errno, SysResult};

/// Longest path, NUL included: a path of PATH_MAX bytes or more is ENAMETOOLONG.
pub const PATH_MAX: usize = 4096;
/// Longest single component.
pub const NAME_MAX: usize = 255;
/// Symlinks followed in one lookup before ELOOP (Linux's MAXSYMLINKS).
pub const MAXSYMLINKS: usize = 40;

/// One step of a path walk ("." and empty components are dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component<'a> {
    Parent,
    Normal(&'a [u8]),
}

/// The length checks every path syscall makes on its argument (`getname`): empty ⇒ ENOENT
/// (callers that accept AT_EMPTY_PATH check before calling), ≥ PATH_MAX or any component
/// longer than NAME_MAX ⇒ ENAMETOOLONG.
pub fn check(path: &[u8]) -> SysResult<()> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if path.split(|&c| c == b'/').any(|c| c.len() > NAME_MAX) {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

pub fn is_absolute(path: &[u8]) -> bool {
    path.first() == Some(&b'/')
}

/// Does the path insist on a directory: a trailing slash, or a last component "." or ".."?
pub fn must_be_dir(path: &[u8]) -> bool {
    let last = path.rsplit(|&c| c == b'/').next().unwrap_or(b"");
    path.last() == Some(&b'/') || last == b"." || last == b".."
}

/// The components of a path, without empty and "." ones.
pub fn components(path: &[u8]) -> impl Iterator<Item = Component<'_>> {
    path.split(|&c| c == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .map(|c| {
            if c == b".." {
                Component::Parent
            } else {
                Component::Normal(c)
            }
        })
}

/// A lexically normalised absolute path written into a caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Normalized {
    /// Bytes of the result in the buffer ("/" for the root; never a trailing slash otherwise).
    pub len: usize,
    /// The path asked for a directory (see `must_be_dir`).
    pub must_be_dir: bool,
}

/// Resolve `path` against `cwd` (absolute, itself normalised) into `out`: "." and empty
/// components dropped, ".." removes the previous component ("/.." is "/"). Errors as `check`,
/// plus ENAMETOOLONG when the result does not fit PATH_MAX or `out`.
pub fn normalize(cwd: &[u8], path: &[u8], out: &mut [u8]) -> SysResult<Normalized> {
    check(path)?;
    let mut len = 0usize;
    let push = |out: &mut [u8], len: &mut usize, c: Component| -> SysResult<()> {
        match c {
            Component::Parent => {
                let cut = out[..*len].iter().rposition(|&b| b == b'/').unwrap_or(0);
                *len = cut;
            }
            Component::Normal(name) => {
                let end = *len + 1 + name.len();
                if end >= PATH_MAX || end > out.len() {
                    return Err(Errno::ENAMETOOLONG);
                }
                out[*len] = b'/';
                out[*len + 1..end].copy_from_slice(name);
                *len = end;
            }
        }
        Ok(())
    };
    if !is_absolute(path) {
        for c in components(cwd) {
            push(out, &mut len, c)?;
        }
    }
    for c in components(path) {
        push(out, &mut len, c)?;
    }
    if len == 0 {
        *out.first_mut().ok_or(Errno::ENAMETOOLONG)? = b'/';
        len = 1;
    }
    Ok(Normalized {
        len,
        must_be_dir: must_be_dir(path),
    })
}

/// Split for calls that act on the last component (mkdir, unlink, rename, open O_CREAT):
/// returns (parent, last, trailing_slash). `parent` is "" for a bare name (meaning the
/// starting directory) and "/" for a name in the root; `last` may be "." or "..", which the
/// callers refuse in their own ways (mkdir EEXIST, rmdir EINVAL/ENOTEMPTY, unlink EISDIR...);
/// for "/" itself `last` is empty.
pub fn split_last(path: &[u8]) -> SysResult<(&[u8], &[u8], bool)> {
    check(path)?;
    let mut end = path.len();
    while end > 0 && path[end - 1] == b'/' {
        end -= 1;
    }
    let trailing = end < path.len();
    let body = &path[..end];
    match body.iter().rposition(|&c| c == b'/') {
        None => Ok((&b""[..], body, trailing)),
        Some(slash) => {
            let mut pend = slash;
            while pend > 0 && body[pend - 1] == b'/' {
                pend -= 1;
            }
            let parent = if pend == 0 { &path[..1] } else { &body[..pend] };
            Ok((parent, &body[slash + 1..], trailing))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn norm(cwd: &str, p: &str) -> SysResult<(std::string::String, bool)> {
        let mut out = vec![0u8; PATH_MAX];
        let n = normalize(cwd.as_bytes(), p.as_bytes(), &mut out)?;
        Ok((
            std::string::String::from_utf8(out[..n.len].to_vec()).unwrap(),
            n.must_be_dir,
        ))
    }

    #[test]
    fn normalisation() {
        let ok = |cwd, p, want: &str, dir| assert_eq!(norm(cwd, p), Ok((want.into(), dir)));
        ok("/", "/", "/", true);
        ok("/", "//", "/", true);
        ok("/home", "a", "/home/a", false);
        ok("/home", "./a/./b", "/home/a/b", false);
        ok("/home", "a//b///", "/home/a/b", true);
        ok("/home/u", "..", "/home", true);
        ok("/home/u", "../..", "/", true);
        ok("/", "../../x", "/x", false);
        ok("/a", "/b/../c/.", "/c", true);
        ok("/a/b", ".", "/a/b", true);
        ok("/", "a/..", "/", true);
        assert_eq!(norm("/", ""), Err(Errno::ENOENT));
    }

    #[test]
    fn limits() {
        let name255 = "n".repeat(255);
        let name256 = "n".repeat(256);
        assert!(norm("/", &name255).is_ok());
        assert_eq!(norm("/", &name256), Err(Errno::ENAMETOOLONG));
        assert_eq!(check(name256.as_bytes()), Err(Errno::ENAMETOOLONG));
        let long: Vec<u8> = b"/a".repeat(2048); // 4096 bytes
        assert_eq!(check(&long), Err(Errno::ENAMETOOLONG));
        assert_eq!(check(&long[..4095]), Ok(()));
        // A short relative path that only overflows once joined with cwd.
        let cwd: std::string::String = "/d".repeat(2040);
        assert_eq!(norm(&cwd, "0123456789abcdef"), Err(Errno::ENAMETOOLONG));
        let mut tiny = [0u8; 4];
        assert_eq!(
            normalize(b"/", b"/abcd", &mut tiny),
            Err(Errno::ENAMETOOLONG)
        );
    }

    #[test]
    fn components_and_split() {
        let c: Vec<_> = components(b"//a/./b/../c/").collect();
        assert_eq!(
            c,
            [
                Component::Normal(b"a"),
                Component::Normal(b"b"),
                Component::Parent,
                Component::Normal(b"c")
            ]
        );
        assert!(
            must_be_dir(b"x/") && must_be_dir(b"x/..") && must_be_dir(b".") && !must_be_dir(b"x")
        );
        assert_eq!(split_last(b"a"), Ok((&b""[..], &b"a"[..], false)));
        assert_eq!(split_last(b"/a"), Ok((&b"/"[..], &b"a"[..], false)));
        assert_eq!(split_last(b"/a/b//"), Ok((&b"/a"[..], &b"b"[..], true)));
        assert_eq!(split_last(b"x//y"), Ok((&b"x"[..], &b"y"[..], false)));
        assert_eq!(split_last(b"//y"), Ok((&b"/"[..], &b"y"[..], false)));
        assert_eq!(split_last(b"/"), Ok((&b""[..], &b""[..], true)));
        assert_eq!(split_last(b"a/.."), Ok((&b"a"[..], &b".."[..], false)));
        assert_eq!(split_last(b""), Err(Errno::ENOENT));
    }
}
