//! cpio "newc" archives (magic `070701`, and `070702` with a checksum field): the format of a
//! Linux initramfs. The reader borrows from the archive and never allocates; the writer pushes
//! bytes into a caller-supplied sink.
//!
//! Layout of one entry: a 110-byte ASCII header (the magic, then 13 fields of 8 hex digits), the
//! NUL-terminated name, zero padding so that header + name end on a 4-byte boundary, the data,
//! and zero padding to 4 again. An entry named `TRAILER!!!` ends an archive. Like Linux's
//! initramfs unpacker, the reader accepts several archives one after another with any number of
//! zero bytes between them (each archive starting 4-aligned), and an archive that ends without a
//! trailer at an entry boundary.

/// Length of a newc header.
pub const HEADER_LEN: usize = 110;
/// The name of the entry that ends an archive.
pub const TRAILER: &str = "TRAILER!!!";

/// File-type bits of `mode`, as in Linux's `S_IF*`.
pub const S_IFMT: u32 = 0o170000;
pub const S_IFSOCK: u32 = 0o140000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFBLK: u32 = 0o060000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFIFO: u32 = 0o010000;

/// Why an archive could not be read. `offset` is where in the input the problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpioError {
    /// The header's magic is neither `070701` nor `070702`.
    BadMagic { offset: usize },
    /// A header field is not 8 hex digits.
    BadField { offset: usize },
    /// The input ends inside a header, a name or a file's data.
    Truncated { offset: usize },
    /// The name is empty, lacks its NUL terminator, has a NUL inside or is not UTF-8.
    BadName { offset: usize },
    /// Something other than zero padding follows an archive at an unaligned offset.
    BadPadding { offset: usize },
}

/// One archive member. `data` is a regular file's contents or a symlink's target; empty for
/// other types (and for all but the last of a set of hard links, as newc stores the data once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The path without a leading `./` or `/`; the archive's root (`.`) is the empty string.
    pub name: &'a str,
    pub ino: u32,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub mtime: u32,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub rdev_major: u32,
    pub rdev_minor: u32,
    pub data: &'a [u8],
}

impl Entry<'_> {
    pub fn file_type(&self) -> u32 {
        self.mode & S_IFMT
    }
    pub fn is_dir(&self) -> bool {
        self.file_type() == S_IFDIR
    }
    pub fn is_file(&self) -> bool {
        self.file_type() == S_IFREG
    }
    pub fn is_symlink(&self) -> bool {
        self.file_type() == S_IFLNK
    }
    /// Permission bits (including setuid, setgid and sticky).
    pub fn perm(&self) -> u32 {
        self.mode & 0o7777
    }
}

/// Iterates over the members of `archive` (trailers excluded). After the first error the
/// iterator yields nothing more.
pub fn entries(archive: &[u8]) -> Entries<'_> {
    Entries {
        buf: archive,
        pos: 0,
        done: false,
    }
}

pub struct Entries<'a> {
    buf: &'a [u8],
    pos: usize,
    done: bool,
}

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn hex_field(h: &[u8], index: usize, base: usize) -> Result<u32, CpioError> {
    let start = 6 + 8 * index;
    let mut v: u32 = 0;
    for &c in &h[start..start + 8] {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => {
                return Err(CpioError::BadField {
                    offset: base + start,
                })
            }
        };
        v = (v << 4) | u32::from(d);
    }
    Ok(v)
}

fn strip_name(name: &str) -> &str {
    let mut n = name;
    loop {
        if let Some(rest) = n.strip_prefix("./") {
            n = rest;
        } else if let Some(rest) = n.strip_prefix('/') {
            n = rest;
        } else {
            break;
        }
    }
    if n == "." {
        ""
    } else {
        n
    }
}

impl<'a> Entries<'a> {
    /// Parses the entry at `self.pos` (which is 4-aligned and not past the end).
    /// Returns `None` for a trailer.
    fn parse_one(&mut self) -> Result<Option<Entry<'a>>, CpioError> {
        let base = self.pos;
        let buf = self.buf;
        if let Some(magic) = buf.get(base..base + 6) {
            if magic != b"070701" && magic != b"070702" {
                return Err(CpioError::BadMagic { offset: base });
            }
        }
        let h = buf
            .get(base..base + HEADER_LEN)
            .ok_or(CpioError::Truncated { offset: base })?;
        if &h[..6] != b"070701" && &h[..6] != b"070702" {
            return Err(CpioError::BadMagic { offset: base });
        }
        let f = |i| hex_field(h, i, base);
        let (ino, mode, uid, gid, nlink, mtime) = (f(0)?, f(1)?, f(2)?, f(3)?, f(4)?, f(5)?);
        let filesize = f(6)? as usize;
        let (dev_major, dev_minor, rdev_major, rdev_minor) = (f(7)?, f(8)?, f(9)?, f(10)?);
        let namesize = f(11)? as usize;
        f(12)?; // check: a checksum for 070702, zero for 070701; not verified (Linux does not).

        let name_start = base + HEADER_LEN;
        let name_end = name_start
            .checked_add(namesize)
            .ok_or(CpioError::Truncated { offset: name_start })?;
        let raw = buf
            .get(name_start..name_end)
            .ok_or(CpioError::Truncated { offset: name_start })?;
        let bad_name = CpioError::BadName { offset: name_start };
        let (&last, text) = raw.split_last().ok_or(bad_name)?;
        if last != 0 || text.is_empty() || text.contains(&0) {
            return Err(bad_name);
        }
        let name = core::str::from_utf8(text).map_err(|_| bad_name)?;

        let data_start = align4(name_end);
        let data_end = data_start
            .checked_add(filesize)
            .ok_or(CpioError::Truncated { offset: data_start })?;
        if data_start > buf.len() {
            return Err(CpioError::Truncated { offset: name_end });
        }
        let data = buf
            .get(data_start..data_end)
            .ok_or(CpioError::Truncated { offset: data_start })?;
        // The final padding may be missing at the very end of the input.
        self.pos = align4(data_end).min(buf.len().max(data_end));
        if name == TRAILER {
            return Ok(None);
        }
        Ok(Some(Entry {
            name: strip_name(name),
            ino,
            mode,
            uid,
            gid,
            nlink,
            mtime,
            dev_major,
            dev_minor,
            rdev_major,
            rdev_minor,
            data,
        }))
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, CpioError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            // Zero padding between archives (and after the last one) is skipped.
            let skipped = self.buf[self.pos..].iter().take_while(|&&b| b == 0).count();
            if skipped > 0 {
                self.pos += skipped;
                if self.pos == self.buf.len() {
                    self.done = true;
                    return None;
                }
                if !self.pos.is_multiple_of(4) {
                    self.done = true;
                    return Some(Err(CpioError::BadPadding { offset: self.pos }));
                }
            }
            if self.pos >= self.buf.len() {
                self.done = true;
                return None;
            }
            match self.parse_one() {
                Ok(Some(e)) => return Some(Ok(e)),
                Ok(None) => continue, // a trailer: another archive may follow
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

/// What the writer puts in a header besides the name and the data size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Meta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: u32,
    pub rdev_major: u32,
    pub rdev_minor: u32,
}

/// Writes a newc archive into `sink`, one piece at a time. Inode numbers are assigned in order
/// from 1; every entry has one link (directories two), so no hard links are produced.
pub struct Writer<F: FnMut(&[u8])> {
    sink: F,
    written: usize,
    next_ino: u32,
}

impl<F: FnMut(&[u8])> Writer<F> {
    pub fn new(sink: F) -> Self {
        Writer {
            sink,
            written: 0,
            next_ino: 1,
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.written
    }

    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    fn put(&mut self, bytes: &[u8]) {
        (self.sink)(bytes);
        self.written += bytes.len();
    }

    fn pad4(&mut self) {
        let n = align4(self.written) - self.written;
        self.put(&[0; 3][..n]);
    }

    fn header(&mut self, name: &str, meta: &Meta, ino: u32, nlink: u32, filesize: usize) {
        let namesize = name.len() + 1;
        let fields = [
            ino,
            meta.mode,
            meta.uid,
            meta.gid,
            nlink,
            meta.mtime,
            filesize as u32,
            0, // dev major/minor: one device for the whole archive
            0,
            meta.rdev_major,
            meta.rdev_minor,
            namesize as u32,
            0, // check
        ];
        let mut h = [0u8; HEADER_LEN];
        h[..6].copy_from_slice(b"070701");
        for (i, v) in fields.iter().enumerate() {
            for d in 0..8 {
                let nib = (v >> (28 - 4 * d)) & 0xf;
                h[6 + 8 * i + d] = b"0123456789abcdef"[nib as usize];
            }
        }
        self.put(&h);
        self.put(name.as_bytes());
        self.put(&[0]);
        self.pad4();
    }

    /// Appends one member. `name` is stored as given (conventionally without a leading `/`).
    pub fn entry(&mut self, name: &str, meta: &Meta, data: &[u8]) {
        let ino = self.next_ino;
        self.next_ino += 1;
        let nlink = if meta.mode & S_IFMT == S_IFDIR { 2 } else { 1 };
        self.header(name, meta, ino, nlink, data.len());
        self.put(data);
        self.pad4();
    }

    pub fn dir(&mut self, name: &str, perm: u32) {
        self.entry(name, &meta(S_IFDIR | perm), &[]);
    }

    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) {
        self.entry(name, &meta(S_IFREG | perm), data);
    }

    pub fn symlink(&mut self, name: &str, target: &str) {
        self.entry(name, &meta(S_IFLNK | 0o777), target.as_bytes());
    }

    /// A device node; `kind` is `S_IFCHR` or `S_IFBLK`.
    pub fn device(&mut self, name: &str, kind: u32, perm: u32, major: u32, minor: u32) {
        let m = Meta {
            rdev_major: major,
            rdev_minor: minor,
            ..meta(kind | perm)
        };
        self.entry(name, &m, &[]);
    }

    /// Writes the trailer and pads the archive to a multiple of 512 bytes, as cpio(1) does.
    /// Returns the sink.
    pub fn finish(mut self) -> F {
        self.header(TRAILER, &Meta::default(), 0, 1, 0);
        let n = self.written.next_multiple_of(512) - self.written;
        for _ in 0..n {
            self.put(&[0]);
        }
        self.sink
    }
}

fn meta(mode: u32) -> Meta {
    Meta {
        mode,
        ..Meta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn build(f: impl FnOnce(&mut Writer<&mut dyn FnMut(&[u8])>)) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut sink = |b: &[u8]| out.extend_from_slice(b);
            #[allow(clippy::type_complexity)]
            let mut w: Writer<&mut dyn FnMut(&[u8])> = Writer::new(&mut sink);
            f(&mut w);
            w.finish();
        }
        out
    }

    fn sample() -> Vec<u8> {
        build(|w| {
            w.dir("dev", 0o755);
            w.device("dev/console", S_IFCHR, 0o600, 5, 1);
            w.file("init", 0o755, b"\x7fELF....");
            w.file("a", 0o644, b"");
            w.file("bc", 0o644, b"x");
            w.symlink("bin/sh", "/init");
        })
    }

    #[test]
    fn round_trip() {
        let a = sample();
        assert_eq!(a.len() % 512, 0);
        let es: Vec<_> = entries(&a).map(|e| e.unwrap()).collect();
        let names: Vec<_> = es.iter().map(|e| e.name).collect();
        assert_eq!(names, ["dev", "dev/console", "init", "a", "bc", "bin/sh"]);
        assert!(es[0].is_dir() && es[0].perm() == 0o755 && es[0].nlink == 2);
        assert_eq!(es[1].file_type(), S_IFCHR);
        assert_eq!((es[1].rdev_major, es[1].rdev_minor), (5, 1));
        assert!(es[2].is_file());
        assert_eq!(es[2].data, b"\x7fELF....");
        assert_eq!(es[3].data, b"");
        assert_eq!(es[4].data, b"x");
        assert!(es[5].is_symlink());
        assert_eq!(es[5].data, b"/init");
        let inos: Vec<_> = es.iter().map(|e| e.ino).collect();
        assert_eq!(inos, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn alignment_of_header_name_and_data() {
        let a = build(|w| w.file("bc", 0o644, b"x"));
        // header 110 + "bc\0" = 113 -> padded to 116; data 1 byte -> padded to 120.
        assert_eq!(&a[110..116], b"bc\0\0\0\0");
        assert_eq!(a[116], b'x');
        assert_eq!(&a[117..120], &[0, 0, 0]);
        assert_eq!(&a[120..126], b"070701");
        // namesize and filesize fields
        assert_eq!(&a[6 + 8 * 11..6 + 8 * 12], b"00000003");
        assert_eq!(&a[6 + 8 * 6..6 + 8 * 7], b"00000001");
        // The trailer follows.
        assert_eq!(&a[120 + 110..120 + 110 + 10], TRAILER.as_bytes());
    }

    #[test]
    fn name_prefixes_are_stripped() {
        let a = build(|w| {
            w.dir(".", 0o755);
            w.file("./etc/x", 0o644, b"1");
            w.file("/abs", 0o644, b"2");
        });
        let names: Vec<_> = entries(&a).map(|e| e.unwrap().name).collect();
        assert_eq!(names, ["", "etc/x", "abs"]);
    }

    #[test]
    fn concatenated_archives_with_zero_padding() {
        let mut a = build(|w| w.file("one", 0o644, b"1"));
        a.extend_from_slice(&[0; 1024]);
        // An archive without the 512 padding, directly after (4-aligned).
        let mut b = build(|w| w.file("two", 0o644, b"22"));
        // Drop the 512-byte block padding: header+name 116, data 4, trailer 124.
        b.truncate(116 + 4 + 124);
        a.extend_from_slice(&b);
        a.extend_from_slice(&build(|w| w.file("three", 0o644, b"333")));
        let names: Vec<_> = entries(&a).map(|e| e.unwrap().name).collect();
        assert_eq!(names, ["one", "two", "three"]);
    }

    #[test]
    fn uppercase_hex_and_crc_magic_accepted() {
        let mut a = build(|w| w.file("f", 0o644, b"abc"));
        a[5] = b'2';
        // mode 0o100644 = 0x81a4 -> "000081A4"
        a[6 + 8..6 + 16].copy_from_slice(b"000081A4");
        let e = entries(&a).next().unwrap().unwrap();
        assert_eq!(e.mode, 0o100644);
        assert_eq!(e.data, b"abc");
    }

    #[test]
    fn archive_without_trailer_ends_cleanly() {
        let a = build(|w| w.file("f", 0o644, b"abcd"));
        let end = 110 + 2 + 4; // header, "f\0" (already aligned), 4 data bytes
        let names: Vec<_> = entries(&a[..end]).map(|e| e.unwrap().name).collect();
        assert_eq!(names, ["f"]);
        assert_eq!(entries(&[]).count(), 0);
    }

    #[test]
    fn errors() {
        let a = sample();
        assert_eq!(
            entries(b"070707xxxx").next(),
            Some(Err(CpioError::BadMagic { offset: 0 }))
        );
        let mut bad = a.clone();
        bad[6 + 3] = b'g';
        assert_eq!(
            entries(&bad).next(),
            Some(Err(CpioError::BadField { offset: 6 }))
        );
        // Truncated in the header, the name and the data.
        assert!(matches!(
            entries(&a[..50]).next(),
            Some(Err(CpioError::Truncated { .. }))
        ));
        let mut bad = a.clone();
        bad[6 + 8 * 11..6 + 8 * 12].copy_from_slice(b"0000ffff");
        assert!(matches!(
            entries(&bad).next(),
            Some(Err(CpioError::Truncated { .. }))
        ));
        let mut bad = a.clone();
        bad[6 + 8 * 6..6 + 8 * 7].copy_from_slice(b"ffffffff");
        assert!(matches!(
            entries(&bad).next(),
            Some(Err(CpioError::Truncated { .. }))
        ));
        // A name without its NUL, and an empty name.
        let mut bad = a.clone();
        bad[6 + 8 * 11..6 + 8 * 12].copy_from_slice(b"00000002");
        assert!(matches!(
            entries(&bad).next(),
            Some(Err(CpioError::BadName { .. }))
        ));
        let mut bad = a.clone();
        bad[6 + 8 * 11..6 + 8 * 12].copy_from_slice(b"00000000");
        assert!(matches!(
            entries(&bad).next(),
            Some(Err(CpioError::BadName { .. }))
        ));
        // Zero padding that leaves the next header unaligned.
        let mut bad = build(|w| w.file("f", 0o644, b""));
        let mut tail = vec![0u8; 2];
        tail.extend_from_slice(&a);
        bad.extend_from_slice(&tail);
        let r: Vec<_> = entries(&bad).collect();
        assert!(matches!(r.last(), Some(Err(CpioError::BadPadding { .. }))));
        // After an error, nothing more.
        let mut it = entries(b"garbage!");
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }

    /// Every prefix and many corruptions of a valid archive: no panic, and the iterator ends.
    #[test]
    fn truncated_and_garbage_input_never_panics() {
        let a = sample();
        for n in 0..a.len() {
            for e in entries(&a[..n]).take(100) {
                let _ = e;
            }
        }
        let mut seed: u32 = 0x1234_5678;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for _ in 0..5000 {
            let mut b = a.clone();
            for _ in 0..1 + rnd() % 8 {
                let i = rnd() as usize % b.len();
                b[i] = match rnd() % 4 {
                    0 => b"0123456789abcdef"[rnd() as usize % 16],
                    1 => b'f',
                    2 => 0,
                    _ => rnd() as u8,
                };
            }
            let cut = rnd() as usize % (b.len() + 1);
            assert!(entries(&b[..cut]).take(1000).count() < 1000);
        }
        let mut junk = std::vec![0u8; 4096];
        for x in junk.iter_mut() {
            *x = rnd() as u8;
        }
        for n in [0, 1, 109, 110, 111, 500, 4096] {
            let _ = entries(&junk[..n]).take(10).count();
        }
    }
}
