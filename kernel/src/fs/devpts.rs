//! devpts (Linux's fs/devpts/inode.c, one instance): the directory at /dev/pts holding `ptmx`
//! (5:2) and one character node per pty slave, `N` for index N (major 136 + N / 256, minor
//! N % 256). The tty module's pty driver adds a node when a master is opened and removes it
//! when the master closes; the nodes' owner and mode follow the mount options.
//!
//! Linux makes a new instance at each mount; Svelt keeps the one: a mount of devpts on
//! /dev/pts sets its options (as a fresh mount's: the defaults, then those given), a mount
//! elsewhere shows the same directory there too.

#![forbid(unsafe_code)]

use super::ramfs::DevNode;
use super::{new_ino, Attrs, Inode, Kind};
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use spin::{Mutex, Once};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::mount::DevptsOptions;

/// The pty slaves' first major (Linux's UNIX98_PTY_SLAVE_MAJOR) and how many majors they use.
pub const PTS_MAJOR: u32 = 136;
pub const PTS_MAJORS: u32 = 8;

/// (major, minor) of slave `index`.
pub fn slave_rdev(index: u32) -> (u32, u32) {
    (PTS_MAJOR + index / 256, index % 256)
}

/// The slave index of device (major, minor), if it is one.
pub fn slave_index(major: u32, minor: u32) -> Option<u32> {
    (PTS_MAJOR..PTS_MAJOR + PTS_MAJORS)
        .contains(&major)
        .then(|| (major - PTS_MAJOR) * 256 + minor)
}

pub struct PtsDir {
    ino: u64,
    attrs: Attrs,
    st: Mutex<State>,
}

struct State {
    opts: DevptsOptions,
    ptmx: Arc<DevNode>,
    slaves: BTreeMap<u32, Arc<DevNode>>,
}

static ROOT: Once<Arc<PtsDir>> = Once::new();

/// The devpts directory. Until a mount says otherwise its options are those a Debian system
/// mounts /dev/pts with: gid=5 (tty), mode=620, ptmxmode=000.
pub fn root() -> Arc<PtsDir> {
    ROOT.call_once(|| {
        let opts = DevptsOptions {
            gid: Some(5),
            mode: 0o620,
            ..DevptsOptions::default()
        };
        Arc::new(PtsDir {
            ino: new_ino(),
            attrs: Attrs::new(0o755),
            st: Mutex::new(State {
                opts,
                ptmx: DevNode::new(opts.ptmxmode, 5, 2),
                slaves: BTreeMap::new(),
            }),
        })
    })
    .clone()
}

/// `node` is the devpts directory.
pub fn is_root(node: &dyn Inode) -> bool {
    node.as_any().downcast_ref::<PtsDir>().is_some()
}

/// New options, as a mount gives them: they apply to slaves made from now on, and the ptmx
/// node takes its new mode at once.
pub fn configure(opts: DevptsOptions) {
    let r = root();
    let mut st = r.st.lock();
    st.opts = opts;
    if let Some(a) = st.ptmx.attrs() {
        a.set_perm(opts.ptmxmode);
    }
}

/// The most ptys the instance may hold (its `max=`).
pub fn max() -> u32 {
    root().st.lock().opts.max
}

/// Adds the node of slave `index`: owned by the caller (or the mount's uid=/gid=).
pub fn add_slave(index: u32) {
    let r = root();
    let mut st = r.st.lock();
    let (major, minor) = slave_rdev(index);
    let node = DevNode::new(st.opts.mode, major, minor);
    if let Some(a) = node.attrs() {
        a.linked();
        if st.opts.uid.is_some() || st.opts.gid.is_some() {
            a.set_owner(st.opts.uid, st.opts.gid);
        }
    }
    st.slaves.insert(index, node);
    drop(st);
    r.attrs.modified();
}

/// Removes the node of slave `index` (its master closed).
pub fn remove_slave(index: u32) {
    let r = root();
    let old = r.st.lock().slaves.remove(&index);
    if let Some(a) = old.as_ref().and_then(|n| n.attrs()) {
        a.unlinked();
    }
    r.attrs.modified();
}

/// The node of slave `index`, while its master is open.
pub fn slave_node(index: u32) -> Option<Arc<dyn Inode>> {
    let n = root().st.lock().slaves.get(&index).cloned()?;
    Some(n)
}

impl Inode for PtsDir {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Dir
    }
    fn attrs(&self) -> Option<&Attrs> {
        Some(&self.attrs)
    }
    fn lookup(&self, name: &str) -> SysResult<Arc<dyn Inode>> {
        let st = self.st.lock();
        if name == "ptmx" {
            return Ok(st.ptmx.clone());
        }
        // Only the canonical spelling of an index names a node ("01" does not).
        let i: u32 = name.parse().map_err(|_| Errno::ENOENT)?;
        if i.to_string() != name {
            return Err(Errno::ENOENT);
        }
        match st.slaves.get(&i) {
            Some(n) => Ok(n.clone()),
            None => Err(Errno::ENOENT),
        }
    }
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
        let st = self.st.lock();
        let mut v = Vec::new();
        v.try_reserve(st.slaves.len() + 1)
            .map_err(|_| Errno::ENOMEM)?;
        v.push((String::from("ptmx"), st.ptmx.ino(), Kind::CharDev));
        for (i, n) in st.slaves.iter() {
            v.push((i.to_string(), n.ino(), Kind::CharDev));
        }
        Ok(v)
    }
    fn subdirs(&self) -> usize {
        0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
