//! The names AF_UNIX sockets are bound to: abstract names (per socket type) and path names,
//! the latter by the S_IFSOCK inode bind creates, so connect finds a socket through the file
//! system as on Linux.

#![forbid(unsafe_code)]

use super::{SockType, UnixSocket};
use crate::fs::{new_ino, Attrs, Caller, FileOps, Inode, Kind};
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU32, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::net::*;

/// Names sockets are bound to: abstract names, and path names by the inode bind made.
#[derive(PartialEq, Eq)]
enum Key {
    /// Abstract names are per type (Linux hashes the type in).
    Abstract(UnixName, SockType),
    Inode(u64),
}

static NAMES: Mutex<Vec<(Key, Weak<UnixSocket>)>> = Mutex::new(Vec::new());
static AUTOBIND: AtomicU32 = AtomicU32::new(0);

fn lookup(key: &Key) -> Option<Arc<UnixSocket>> {
    NAMES
        .lock()
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, s)| s.upgrade())
}

impl UnixSocket {
    /// bind: `node` is the S_IFSOCK inode a path name made (None for an abstract name).
    /// EINVAL if already bound, EADDRINUSE if the abstract name is taken.
    pub fn bind(self: &Arc<Self>, name: UnixName, node: Option<u64>) -> SysResult<()> {
        let mut names = NAMES.lock();
        let mut st = self.st.lock();
        if st.addr.is_some() {
            return Err(Errno::EINVAL);
        }
        let key = match node {
            Some(ino) => Key::Inode(ino),
            None => Key::Abstract(name, self.ty),
        };
        // Entries of sockets that are gone make room first.
        names.retain(|(_, s)| s.strong_count() > 0);
        if names.iter().any(|(k, _)| *k == key) {
            return Err(Errno::EADDRINUSE);
        }
        names.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        names.push((key, Arc::downgrade(self)));
        st.addr = Some(name);
        Ok(())
    }

    /// Whether the socket has a name (bind was called).
    pub fn is_bound(&self) -> bool {
        self.st.lock().addr.is_some()
    }

    /// autobind: a free abstract name of five hex digits.
    pub fn autobind(self: &Arc<Self>) -> SysResult<()> {
        for _ in 0..0x100000 {
            let n = AUTOBIND.fetch_add(1, Ordering::Relaxed) & 0xfffff;
            match self.bind(autobind_name(n), None) {
                Err(Errno::EADDRINUSE) => continue,
                Err(Errno::EINVAL) => return Ok(()),
                r => return r,
            }
        }
        Err(Errno::ENOSPC)
    }

    /// The last close frees the socket's name (and entries of sockets already gone).
    pub(super) fn unbind(self: &Arc<Self>) {
        NAMES
            .lock()
            .retain(|(_, s)| s.strong_count() > 0 && !core::ptr::eq(s.as_ptr(), Arc::as_ptr(self)));
    }

    /// Finds the socket a name is bound to: ECONNREFUSED when nobody is (or a path is not a
    /// socket), EPROTOTYPE when it is of another type.
    pub fn find(
        key_node: Option<Arc<dyn Inode>>,
        name: &UnixName,
        ty: SockType,
    ) -> SysResult<Arc<UnixSocket>> {
        let key = match key_node {
            Some(n) if n.kind() == Kind::Socket => Key::Inode(n.ino()),
            Some(_) => return Err(Errno::ECONNREFUSED),
            None => Key::Abstract(*name, ty),
        };
        let s = lookup(&key).ok_or(Errno::ECONNREFUSED)?;
        if s.ty != ty {
            return Err(Errno::EPROTOTYPE);
        }
        Ok(s)
    }
}

/// The file-system node a path bind makes (S_IFSOCK): connect finds the socket by it.
pub struct SockNode {
    ino: u64,
    attrs: Attrs,
}

impl SockNode {
    pub fn new(perm: u32) -> Arc<SockNode> {
        Arc::new(SockNode {
            ino: new_ino(),
            attrs: Attrs::new(perm),
        })
    }
}

impl Inode for SockNode {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Socket
    }
    fn attrs(&self) -> Option<&Attrs> {
        Some(&self.attrs)
    }
    fn open(&self, _cur: &dyn Caller, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        Err(Errno::ENXIO)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
