//! An inet socket as an open file.

#![forbid(unsafe_code)]

use super::*;

/// An open inet socket: what a descriptor holds. Its last close releases the socket.
pub struct InetFile(pub Arc<InetSocket>);

impl Drop for InetFile {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// The inet socket behind a file, if it is one.
pub fn of(file: &File) -> Option<&Arc<InetSocket>> {
    file.ops.as_any().downcast_ref::<InetFile>().map(|s| &s.0)
}

impl FileOps for InetFile {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    fn read_to_user(
        &self,
        _cur: &dyn Caller,
        file: &File,
        dst: UserSlice,
    ) -> Option<SysResult<usize>> {
        let mut c = IovCursor::new(alloc::vec![dst]);
        Some(self.0.recv(&mut c, 0, file.nonblocking()).map(|r| r.n))
    }

    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    fn poll(&self, _cur: &dyn Caller) -> u32 {
        self.0.poll()
    }

    fn ioctl(&self, cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        let v = match cmd {
            svelt_abi::uapi::tty::FIONREAD => self.0.inq(),
            _ => return ifreq_ioctl(cur, cmd, arg),
        };
        crate::mm::uaccess::UserPtr::new(arg).write(&(v as i32))?;
        Ok(0)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
