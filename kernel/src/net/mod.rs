//! Sockets: AF_UNIX (unix/), AF_INET and AF_INET6 on the loopback interface (inet/), and
//! AF_NETLINK's NETLINK_ROUTE (netlink.rs). Every other family is EAFNOSUPPORT, as on a Linux
//! built without it.

#![forbid(unsafe_code)]

pub mod inet;
pub mod netlink;
pub mod unix;

use crate::fs::File;
use crate::mm::uaccess::{Partial, UserSlice};
use alloc::vec::Vec;

/// A user buffer in pieces (an iovec array), filled or drained from the front.
pub struct IovCursor {
    segs: Vec<UserSlice>,
    i: usize,
}

impl IovCursor {
    pub fn new(segs: Vec<UserSlice>) -> IovCursor {
        IovCursor { segs, i: 0 }
    }

    /// Bytes left.
    pub fn len(&self) -> usize {
        self.segs[self.i.min(self.segs.len())..]
            .iter()
            .map(|s| s.len())
            .sum()
    }

    fn next_seg(&mut self) -> Option<&mut UserSlice> {
        while self.i < self.segs.len() && self.segs[self.i].is_empty() {
            self.i += 1;
        }
        self.segs.get_mut(self.i)
    }

    /// Copies `src` out, across pieces; as much as fits.
    pub fn copy_out(&mut self, mut src: &[u8]) -> Result<(), Partial> {
        let mut done = 0;
        while !src.is_empty() {
            let Some(seg) = self.next_seg() else { break };
            let n = seg.len().min(src.len());
            seg.copy_out(&src[..n]).map_err(|p| p.after(done))?;
            done += n;
            src = &src[n..];
        }
        Ok(())
    }

    /// Fills `dst` from the pieces (the caller asks for at most `len()`).
    pub fn copy_in(&mut self, mut dst: &mut [u8]) -> Result<(), Partial> {
        let mut done = 0;
        while !dst.is_empty() {
            let Some(seg) = self.next_seg() else { break };
            let n = seg.len().min(dst.len());
            let (a, b) = dst.split_at_mut(n);
            seg.copy_in(a).map_err(|p| p.after(done))?;
            done += n;
            dst = b;
        }
        Ok(())
    }
}

/// A socket file's inode number (fstat), or `None` for other files.
pub fn socket_ino(f: &File) -> Option<u64> {
    if let Ok(s) = unix::of(f) {
        return Some(s.ino);
    }
    if let Some(s) = inet::of(f) {
        return Some(s.ino);
    }
    netlink::of(f).map(|s| s.ino)
}
