//! Path resolution (Linux's fs/namei.c): the root, each task's cwd and umask (`FsContext`),
//! and the walk from a directory or the cwd through a path, following symlinks.

#![forbid(unsafe_code)]

use super::{ramfs, Caller, Inode, Kind};
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use spin::Once;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::AT_FDCWD;

#[derive(Clone)]
pub struct FsContext {
    /// Canonical absolute path of the cwd.
    pub cwd: String,
    pub cwd_node: Arc<dyn Inode>,
    /// Canonical absolute path of the root (chroot): absolute paths start there and `..`
    /// stops there. Shared: a fork copies the context, and every path lookup reads it.
    pub root: Arc<str>,
    pub umask: u32,
}

pub(super) static ROOT: Once<Arc<dyn Inode>> = Once::new();

pub fn root() -> Arc<dyn Inode> {
    ROOT.get().expect("root file system").clone()
}

impl FsContext {
    pub fn root() -> FsContext {
        FsContext {
            cwd: "/".to_string(),
            cwd_node: root_or_empty(),
            root: Arc::from("/"),
            umask: 0o022,
        }
    }
}

fn root_or_empty() -> Arc<dyn Inode> {
    ROOT.get()
        .cloned()
        .unwrap_or_else(|| ramfs::RamDir::new(0o755))
}

/// A resolved path: the node and its canonical absolute path.
pub struct Resolved {
    pub node: Arc<dyn Inode>,
    pub path: String,
}

/// The parent directory of a path's last component, and that component.
pub struct ResolvedParent {
    pub dir: Arc<dyn Inode>,
    pub dir_path: String,
    pub name: String,
    /// The path ended with '/'.
    pub trailing_slash: bool,
}

const MAX_SYMLINKS: usize = 40;

/// Search (x) permission on the directory `dir` for `caller` (Linux's may_lookup and
/// generic_permission): root passes; anyone else needs the x bit of the class that applies,
/// the owner's if it owns the directory, else the group's if the group is its own, else the
/// others'. Generated directories (/proc, /sys) keep no owner and are not checked.
pub fn may_search(caller: &dyn Caller, dir: &dyn Inode) -> SysResult<()> {
    let (uid, gid) = caller.fs_ids();
    let Some(a) = dir.attrs() else {
        return Ok(());
    };
    if uid == 0 {
        return Ok(());
    }
    let (owner, group) = a.owner();
    let perm = a.perm();
    let x = if owner == uid {
        perm & 0o100
    } else if group == gid {
        perm & 0o010
    } else {
        perm & 0o001
    };
    if x == 0 {
        return Err(Errno::EACCES);
    }
    Ok(())
}

fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        alloc::format!("/{name}")
    } else {
        alloc::format!("{dir}/{name}")
    }
}

/// Walks `path` from `start` (a directory stack of (path, node)), following symlinks in the
/// middle, and in the last component if `follow`.
fn walk(
    caller: &dyn Caller,
    root: &str,
    mut stack: Vec<(String, Arc<dyn Inode>)>,
    path: &str,
    follow: bool,
    depth: &mut usize,
) -> SysResult<Resolved> {
    if path.starts_with('/') {
        stack = path_stack(root)?;
    }
    let comps = crate::mm::try_collect(path.split('/').filter(|c| !c.is_empty()))?;
    for (i, comp) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        let (cur_path, cur) = stack.last().unwrap().clone();
        if cur.kind() != Kind::Dir {
            return Err(Errno::ENOTDIR);
        }
        // Before the name is looked up, "." and ".." included.
        may_search(caller, &*cur)?;
        match *comp {
            "." => continue,
            ".." => {
                // `..` of the process's root is the root itself (as Linux's follow_dotdot).
                if stack.len() > 1 && cur_path != root {
                    stack.pop();
                }
                continue;
            }
            _ => {}
        }
        if comp.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        let next = cur.lookup(comp)?;
        if next.kind() == Kind::Symlink && (!last || follow) {
            *depth += 1;
            if *depth > MAX_SYMLINKS {
                return Err(Errno::ELOOP);
            }
            let target = next.readlink(caller)?;
            let r = walk(caller, root, stack.clone(), &target, true, depth)?;
            stack = path_stack(&r.path)?;
            continue;
        }
        stack.push((join(&cur_path, comp), next));
    }
    let (path, node) = stack.pop().unwrap();
    if path.len() > 4095 {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(Resolved { node, path })
}

/// The directory stack for a canonical absolute path.
pub(super) fn path_stack(path: &str) -> SysResult<Vec<(String, Arc<dyn Inode>)>> {
    let mut stack: Vec<(String, Arc<dyn Inode>)> = alloc::vec![("/".to_string(), root())];
    for comp in path.split('/').filter(|c| !c.is_empty()) {
        let (p, n) = stack.last().unwrap().clone();
        let next = n.lookup(comp)?;
        stack.push((join(&p, comp), next));
    }
    Ok(stack)
}

/// Where a relative path starts: the cwd or an open directory.
fn start_stack(
    cur: &dyn Caller,
    dirfd: i32,
    root: &str,
    path: &str,
) -> SysResult<Vec<(String, Arc<dyn Inode>)>> {
    if path.starts_with('/') {
        if root == "/" {
            return Ok(alloc::vec![("/".to_string(), self::root())]);
        }
        return path_stack(root);
    }
    let base = if dirfd == AT_FDCWD {
        cur.fs().lock().cwd.clone()
    } else {
        let file = cur.files().lock().get(dirfd)?;
        match &file.node {
            Some(n) if n.kind() == Kind::Dir => file.path.clone(),
            Some(_) => return Err(Errno::ENOTDIR),
            None => return Err(Errno::ENOTDIR),
        }
    };
    path_stack(&base)
}

/// Resolves `path` relative to `dirfd`, for `cur` (its cwd and descriptors; /proc/self).
pub fn resolve(cur: &dyn Caller, dirfd: i32, path: &str, follow: bool) -> SysResult<Resolved> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let root = cur.fs().lock().root.clone();
    let stack = start_stack(cur, dirfd, &root, path)?;
    let mut depth = 0;
    // A trailing slash asks for a directory, so a final symlink is followed even by the
    // no-follow calls (lstat("link/") stats the directory, as on Linux).
    let r = walk(
        cur,
        &root,
        stack,
        path,
        follow || path.ends_with('/'),
        &mut depth,
    )?;
    if path.ends_with('/') && r.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    Ok(r)
}

/// Resolves all but the last component of `path`.
pub fn resolve_parent(cur: &dyn Caller, dirfd: i32, path: &str) -> SysResult<ResolvedParent> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let trailing_slash = path.ends_with('/') && path.len() > 1;
    let trimmed = path.trim_end_matches('/');
    let root = cur.fs().lock().root.clone();
    if trimmed.is_empty() {
        // "/" itself.
        let (dir_path, dir) = path_stack(&root)?.pop().ok_or(Errno::ENOENT)?;
        return Ok(ResolvedParent {
            dir,
            dir_path,
            name: ".".to_string(),
            trailing_slash,
        });
    }
    let (dir_part, name) = match trimmed.rfind('/') {
        Some(i) => (&trimmed[..=i], &trimmed[i + 1..]),
        None => ("", trimmed),
    };
    if name.len() > 255 {
        return Err(Errno::ENAMETOOLONG);
    }
    let stack = start_stack(cur, dirfd, &root, path)?;
    let mut depth = 0;
    let dir = if dir_part.is_empty() {
        let (p, n) = stack.last().unwrap().clone();
        Resolved { node: n, path: p }
    } else {
        walk(cur, &root, stack, dir_part, true, &mut depth)?
    };
    if dir.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    may_search(cur, &*dir.node)?;
    Ok(ResolvedParent {
        dir: dir.node,
        dir_path: dir.path,
        name: name.to_string(),
        trailing_slash,
    })
}

/// `path` (canonical, absolute) as seen from `root`: "/" for the root itself, None for a path
/// outside it (Linux's getcwd then prefixes "(unreachable)").
pub fn relative_to_root<'a>(path: &'a str, root: &str) -> Option<&'a str> {
    if root == "/" {
        return Some(path);
    }
    match path.strip_prefix(root) {
        Some("") => Some("/"),
        Some(rest) if rest.starts_with('/') => Some(rest),
        _ => None,
    }
}
