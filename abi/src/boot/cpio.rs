//! cpio "newc" archives (magic `070701`, and `070702` with a checksum field): the format of a
//! Linux initramfs. The reader is a push parser: bytes go in as they arrive (from a
//! decompressor, say) in pieces of any size, members come out as events with the file data
//! borrowed from the input, and nothing is allocated. The writer pushes bytes into a
//! caller-supplied sink.
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

/// File-type bits of `mode`: Linux's `S_IF*`, as the rest of the ABI has them.
pub use crate::uapi::fs::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};

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

/// A member's header, reported before its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// The path without a leading `./` or `/`; the archive's root (`.`) is the empty string.
    pub name: &'a str,
    pub ino: u32,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub mtime: u32,
    /// Bytes of data that follow: a regular file's contents or a symlink's target (0 for the
    /// other types, and for all but the last of a set of hard links, as newc stores the data
    /// once).
    pub size: u32,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub rdev_major: u32,
    pub rdev_minor: u32,
}

impl Header<'_> {
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

/// What the parser found. Trailers are not reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A member begins.
    Begin(Header<'a>),
    /// The next piece of the member's data (pieces come in order, of any size).
    Data(&'a [u8]),
    /// The member's data is complete.
    End,
}

/// Longest name kept, NUL included (PATH_MAX); a member with a longer one is skipped, as
/// Linux's unpacker does.
pub const NAME_MAX: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between members: zero padding, or the `0` that starts a header.
    Idle,
    Header,
    Name,
    /// Padding after the name, then the data.
    NamePad,
    Data,
    /// Padding after the data, then `Idle`.
    DataPad,
    Failed(CpioError),
}

/// A push parser for newc archives, one after another.
pub struct Parser {
    state: State,
    /// Bytes consumed, counted from where the caller says the input starts: alignment is
    /// relative to it, and error offsets are given in it.
    pos: u64,
    /// Where the part being read (header, name, data) started, for `Truncated`.
    part: u64,
    hdr: [u8; HEADER_LEN],
    name: [u8; NAME_MAX],
    /// Bytes of the header or name collected.
    have: usize,
    fields: [u32; 13],
    /// Data bytes left in the member.
    left: u64,
    /// The member is reported (not a trailer, its name fits).
    report: bool,
}

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn hex_field(h: &[u8], index: usize, base: u64) -> Result<u32, CpioError> {
    let start = 6 + 8 * index;
    let mut v: u32 = 0;
    for &c in &h[start..start + 8] {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => {
                return Err(CpioError::BadField {
                    offset: base as usize + start,
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

fn is_magic(m: &[u8]) -> bool {
    m == b"070701" || m == b"070702"
}

impl Default for Parser {
    fn default() -> Self {
        Parser::new()
    }
}

impl Parser {
    pub fn new() -> Parser {
        Parser::starting_at(0)
    }

    /// A parser whose input starts at offset `pos` of something larger (archives start
    /// 4-aligned in it).
    pub fn starting_at(pos: u64) -> Parser {
        Parser {
            state: State::Idle,
            pos,
            part: pos,
            hdr: [0; HEADER_LEN],
            name: [0; NAME_MAX],
            have: 0,
            fields: [0; 13],
            left: 0,
            report: false,
        }
    }

    /// Offset of the next byte to be consumed.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    fn fail(&mut self, e: CpioError) -> Result<usize, CpioError> {
        self.state = State::Failed(e);
        Err(e)
    }

    /// Parses `input`, reporting members to `sink`. Consumes all of it, except when, between
    /// members, a byte that is neither zero padding nor the start of a header comes: then it
    /// stops there and returns how much it consumed, for the caller to look at what follows
    /// (a compressed archive, say). After an error every call returns that error.
    pub fn push(
        &mut self,
        input: &[u8],
        sink: &mut impl FnMut(Event<'_>),
    ) -> Result<usize, CpioError> {
        let mut i = 0;
        loop {
            // Steps that need no input.
            match self.state {
                State::Failed(e) => return Err(e),
                State::NamePad if self.pos.is_multiple_of(4) => {
                    if self.report {
                        let name = self.name_str();
                        let f = &self.fields;
                        sink(Event::Begin(Header {
                            name,
                            ino: f[0],
                            mode: f[1],
                            uid: f[2],
                            gid: f[3],
                            nlink: f[4],
                            mtime: f[5],
                            size: f[6],
                            dev_major: f[7],
                            dev_minor: f[8],
                            rdev_major: f[9],
                            rdev_minor: f[10],
                        }));
                    }
                    self.left = u64::from(self.fields[6]);
                    self.part = self.pos;
                    self.state = State::Data;
                    continue;
                }
                State::Data if self.left == 0 => {
                    if self.report {
                        sink(Event::End);
                    }
                    self.state = State::DataPad;
                    continue;
                }
                State::DataPad if self.pos.is_multiple_of(4) => {
                    self.state = State::Idle;
                    continue;
                }
                _ => {}
            }
            let rest = &input[i..];
            if rest.is_empty() {
                return Ok(i);
            }
            let took = match self.state {
                State::Idle => match rest[0] {
                    0 => rest.iter().take_while(|&&b| b == 0).count(),
                    b'0' if self.pos.is_multiple_of(4) => {
                        self.state = State::Header;
                        self.part = self.pos;
                        self.have = 0;
                        0
                    }
                    b'0' => {
                        return self.fail(CpioError::BadPadding {
                            offset: self.pos as usize,
                        })
                    }
                    _ => return Ok(i),
                },
                State::Header => {
                    let n = rest.len().min(HEADER_LEN - self.have);
                    self.hdr[self.have..self.have + n].copy_from_slice(&rest[..n]);
                    let before = self.have;
                    self.have += n;
                    if before < 6 && self.have >= 6 && !is_magic(&self.hdr[..6]) {
                        return self.fail(CpioError::BadMagic {
                            offset: self.part as usize,
                        });
                    }
                    if self.have == HEADER_LEN {
                        if let Err(e) = self.parse_header() {
                            return self.fail(e);
                        }
                    }
                    n
                }
                State::Name => {
                    let namesize = self.fields[11] as usize;
                    let n = rest.len().min(namesize - self.have);
                    if self.have < NAME_MAX {
                        let keep = n.min(NAME_MAX - self.have);
                        self.name[self.have..self.have + keep].copy_from_slice(&rest[..keep]);
                    }
                    self.have += n;
                    self.pos += n as u64;
                    if self.have == namesize {
                        if let Err(e) = self.check_name() {
                            return self.fail(e);
                        }
                        self.state = State::NamePad;
                    }
                    i += n;
                    continue;
                }
                State::NamePad | State::DataPad => 1,
                State::Data => {
                    let n = rest
                        .len()
                        .min(usize::try_from(self.left).unwrap_or(usize::MAX));
                    if self.report {
                        sink(Event::Data(&rest[..n]));
                    }
                    self.left -= n as u64;
                    n
                }
                State::Failed(e) => return Err(e),
            };
            i += took;
            self.pos += took as u64;
        }
    }

    /// The header is complete: check and decode it.
    fn parse_header(&mut self) -> Result<(), CpioError> {
        let base = self.part;
        for (k, v) in self.fields.iter_mut().enumerate() {
            // The 13th is the checksum (070702) or zero; not verified, as Linux does not.
            *v = hex_field(&self.hdr, k, base)?;
        }
        if self.fields[11] == 0 {
            return Err(CpioError::BadName {
                offset: base as usize + HEADER_LEN,
            });
        }
        self.state = State::Name;
        self.part = base + HEADER_LEN as u64;
        self.have = 0;
        Ok(())
    }

    fn name_str(&self) -> &str {
        let n = self.fields[11] as usize - 1;
        // check_name made sure.
        strip_name(core::str::from_utf8(&self.name[..n]).unwrap_or(""))
    }

    /// The name is complete: a long one makes the member skipped, a trailer is not reported.
    fn check_name(&mut self) -> Result<(), CpioError> {
        let namesize = self.fields[11] as usize;
        if namesize > NAME_MAX {
            self.report = false;
            return Ok(());
        }
        let bad = CpioError::BadName {
            offset: self.part as usize,
        };
        let (&last, text) = self.name[..namesize].split_last().ok_or(bad)?;
        if last != 0 || text.is_empty() || text.contains(&0) {
            return Err(bad);
        }
        let name = core::str::from_utf8(text).map_err(|_| bad)?;
        self.report = name != TRAILER;
        Ok(())
    }

    /// The input has ended: fine between members (the last padding may be missing), an error
    /// inside one.
    pub fn finish(&self) -> Result<(), CpioError> {
        match self.state {
            State::Idle | State::DataPad => Ok(()),
            State::Failed(e) => Err(e),
            // NamePad: the data (even if empty) has not been reached.
            _ => Err(CpioError::Truncated {
                offset: self.part as usize,
            }),
        }
    }
}

/// Parses one complete input: every member to `sink`; anything but archives and zero padding
/// in it is an error.
pub fn parse_all(input: &[u8], sink: &mut impl FnMut(Event<'_>)) -> Result<(), CpioError> {
    let mut p = Parser::new();
    let n = p.push(input, sink)?;
    if n < input.len() {
        return Err(CpioError::BadMagic { offset: n });
    }
    p.finish()
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

/// What an initrd region holds, judged by its first bytes after any zero padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionStart {
    /// A newc header (`070701` or `070702`).
    Cpio,
    /// A gzip member (`1f 8b`).
    Gzip,
    /// An archive compressed in a way the unpacker refuses (it says which when it tries).
    OtherCompression(&'static str),
    /// Nothing but zeros (or nothing at all).
    Empty,
    /// Anything else: not an archive. U-Boot started without an initrd still passes a region
    /// (a copy of whatever its ramdisk address held).
    NotAnArchive,
}

impl RegionStart {
    /// Whether the region is worth unpacking (a refused compression too, so that the
    /// unpacker's error names it).
    pub fn is_archive(self) -> bool {
        !matches!(self, RegionStart::Empty | RegionStart::NotAnArchive)
    }
}

/// Classifies an initrd region (see [`RegionStart`]).
pub fn region_start(region: &[u8]) -> RegionStart {
    let Some(first) = region.iter().position(|&b| b != 0) else {
        return RegionStart::Empty;
    };
    match &region[first..] {
        [b'0', b'7', b'0', b'7', b'0', b'1' | b'2', ..] => RegionStart::Cpio,
        [0x1f, 0x8b, ..] => RegionStart::Gzip,
        [0xfd, b'7', b'z', b'X', b'Z', ..] => RegionStart::OtherCompression("xz"),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => RegionStart::OtherCompression("zstd"),
        [b'B', b'Z', b'h', ..] => RegionStart::OtherCompression("bzip2"),
        [0x02, 0x21, 0x4c, 0x18, ..] => RegionStart::OtherCompression("lz4"),
        _ => RegionStart::NotAnArchive,
    }
}

#[cfg(test)]
mod region_tests {
    use super::*;

    #[test]
    fn classifies_initrd_regions() {
        assert_eq!(region_start(b"070701000000"), RegionStart::Cpio);
        assert_eq!(region_start(b"\x00\x00\x00\x00070702"), RegionStart::Cpio);
        assert_eq!(region_start(&[0x1f, 0x8b, 8, 0]), RegionStart::Gzip);
        assert_eq!(
            region_start(&[0xfd, b'7', b'z', b'X', b'Z', 0]),
            RegionStart::OtherCompression("xz")
        );
        assert_eq!(region_start(&[]), RegionStart::Empty);
        assert_eq!(region_start(&[0; 4096]), RegionStart::Empty);
        // The old binary and odc cpio formats, a kernel image, text, a cut-off magic.
        for junk in [
            &b"070707"[..],
            &[0xc7, 0x71][..],
            &[0x40, 0x00, 0x00, 0x14, 0, 0, 0, 0][..],
            b"hello",
            b"07070",
            &[0x1f][..],
        ] {
            assert_eq!(region_start(junk), RegionStart::NotAnArchive, "{junk:?}");
            assert!(!region_start(junk).is_archive());
        }
        assert!(region_start(&[0x28, 0xb5, 0x2f, 0xfd]).is_archive());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::{String, ToString};
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

    /// One member as the parser reported it, owned.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Got {
        name: String,
        mode: u32,
        ino: u32,
        nlink: u32,
        rdev: (u32, u32),
        size: u32,
        data: Vec<u8>,
        ended: bool,
    }

    /// Pushes `input` in pieces cut at `cuts` (offsets, ascending); returns the members and
    /// the first error, with whatever `push` left unconsumed counted as an error.
    fn parse_cut(input: &[u8], cuts: &[usize]) -> (Vec<Got>, Result<(), CpioError>) {
        let mut got: Vec<Got> = Vec::new();
        let mut p = Parser::new();
        let mut sink = |e: Event<'_>| match e {
            Event::Begin(h) => got.push(Got {
                name: h.name.to_string(),
                mode: h.mode,
                ino: h.ino,
                nlink: h.nlink,
                rdev: (h.rdev_major, h.rdev_minor),
                size: h.size,
                data: Vec::new(),
                ended: false,
            }),
            Event::Data(d) => {
                let g = got.last_mut().unwrap();
                assert!(!g.ended);
                g.data.extend_from_slice(d)
            }
            Event::End => {
                let g = got.last_mut().unwrap();
                assert_eq!(g.data.len(), g.size as usize);
                g.ended = true
            }
        };
        let mut start = 0;
        let mut r = Ok(());
        for &c in cuts.iter().chain([input.len()].iter()) {
            match p.push(&input[start..c], &mut sink) {
                Ok(n) if n < c - start => {
                    r = Err(CpioError::BadMagic { offset: start + n });
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
            start = c;
        }
        if r.is_ok() {
            r = p.finish();
        }
        (got, r)
    }

    fn parse(input: &[u8]) -> (Vec<Got>, Result<(), CpioError>) {
        parse_cut(input, &[])
    }

    fn names(input: &[u8]) -> Vec<String> {
        let (g, r) = parse(input);
        r.unwrap();
        g.into_iter().map(|g| g.name).collect()
    }

    fn first_err(input: &[u8]) -> CpioError {
        parse(input).1.unwrap_err()
    }

    #[test]
    fn round_trip() {
        let a = sample();
        assert_eq!(a.len() % 512, 0);
        let (es, r) = parse(&a);
        r.unwrap();
        let names: Vec<_> = es.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["dev", "dev/console", "init", "a", "bc", "bin/sh"]);
        assert!(es.iter().all(|e| e.ended));
        assert!(es[0].mode & S_IFMT == S_IFDIR && es[0].mode & 0o7777 == 0o755 && es[0].nlink == 2);
        assert_eq!(es[1].mode & S_IFMT, S_IFCHR);
        assert_eq!(es[1].rdev, (5, 1));
        assert_eq!(es[2].mode & S_IFMT, S_IFREG);
        assert_eq!(es[2].data, b"\x7fELF....");
        assert_eq!(es[3].data, b"");
        assert_eq!(es[4].data, b"x");
        assert_eq!(es[5].mode & S_IFMT, S_IFLNK);
        assert_eq!(es[5].data, b"/init");
        let inos: Vec<_> = es.iter().map(|e| e.ino).collect();
        assert_eq!(inos, [1, 2, 3, 4, 5, 6]);
    }

    /// Headers, names, data and padding split across pushes at every point, in two and in
    /// three pieces, and one byte at a time: the same members.
    #[test]
    fn any_split_gives_the_same_members() {
        let mut a = sample();
        a.extend_from_slice(&build(|w| {
            w.file("big", 0o600, &[7u8; 1000]);
            w.file("odd", 0o600, b"12345");
        }));
        let whole = parse(&a);
        whole.1.unwrap();
        assert_eq!(whole.0.len(), 8);
        for c in 0..=a.len() {
            assert_eq!(parse_cut(&a, &[c]), whole, "cut at {c}");
        }
        for c in (0..a.len()).step_by(7) {
            for d in (c..a.len()).step_by(13) {
                assert_eq!(parse_cut(&a, &[c, d]), whole, "cuts at {c}, {d}");
            }
        }
        let bytes: Vec<usize> = (1..a.len()).collect();
        assert_eq!(parse_cut(&a, &bytes), whole);
    }

    #[test]
    fn events_come_as_soon_as_possible() {
        // An empty file's Begin and End arrive with its name, before any padding.
        let a = build(|w| w.file("e", 0o644, b""));
        let mut ev = 0;
        let mut p = Parser::new();
        p.push(&a[..HEADER_LEN + 2], &mut |_| ev += 1).unwrap();
        assert_eq!(ev, 2);
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
        assert_eq!(names(&a), ["", "etc/x", "abs"]);
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
        assert_eq!(names(&a), ["one", "two", "three"]);
        // parse_all agrees.
        let mut n = 0;
        parse_all(&a, &mut |e| n += matches!(e, Event::Begin(_)) as usize).unwrap();
        assert_eq!(n, 3);
    }

    /// Between archives, a byte that is not padding or a header is the caller's: push stops
    /// before it (a compressed archive may follow), at any split.
    #[test]
    fn push_stops_at_foreign_data_between_archives() {
        let mut a = build(|w| w.file("one", 0o644, b"1"));
        let end = a.len();
        a.extend_from_slice(&[0, 0, 0, 0, 0x1f, 0x8b, 8, 0]);
        for c in 0..a.len() {
            let mut p = Parser::new();
            let mut n = 0;
            let first = p.push(&a[..c], &mut |_| ()).unwrap();
            assert_eq!(first, c.min(end + 4));
            if first == c {
                n = p.push(&a[c..], &mut |_| ()).unwrap();
            }
            assert_eq!(first + n, end + 4, "cut {c}");
            p.finish().unwrap();
        }
        // Inside a member the same bytes are data or an error, never a stop.
        let (_, r) = parse(&a);
        assert_eq!(r, Err(CpioError::BadMagic { offset: end + 4 }));
    }

    #[test]
    fn starting_offset_sets_alignment_and_error_offsets() {
        let a = build(|w| w.file("f", 0o644, b"abc"));
        let mut p = Parser::starting_at(1000);
        assert_eq!(p.push(&a, &mut |_| ()), Ok(a.len()));
        assert_eq!(p.pos(), 1000 + a.len() as u64);
        let mut p = Parser::starting_at(1001);
        assert_eq!(
            p.push(&a, &mut |_| ()),
            Err(CpioError::BadPadding { offset: 1001 })
        );
    }

    #[test]
    fn uppercase_hex_and_crc_magic_accepted() {
        let mut a = build(|w| w.file("f", 0o644, b"abc"));
        a[5] = b'2';
        // mode 0o100644 = 0x81a4 -> "000081A4"
        a[6 + 8..6 + 16].copy_from_slice(b"000081A4");
        let (g, r) = parse(&a);
        r.unwrap();
        assert_eq!(g[0].mode, 0o100644);
        assert_eq!(g[0].data, b"abc");
    }

    #[test]
    fn archive_without_trailer_ends_cleanly() {
        let a = build(|w| w.file("f", 0o644, b"abcd"));
        let end = 110 + 2 + 4; // header, "f\0" (already aligned), 4 data bytes
        assert_eq!(names(&a[..end]), ["f"]);
        // Without the final padding too.
        let a = build(|w| w.file("f", 0o644, b"abc"));
        assert_eq!(names(&a[..110 + 2 + 3]), ["f"]);
        assert!(names(&[]).is_empty());
        assert!(names(&[0; 64]).is_empty());
    }

    #[test]
    fn long_names_are_skipped() {
        let long = "d/".repeat(NAME_MAX);
        let a = build(|w| {
            w.file(&long, 0o644, b"skipped data");
            w.file("after", 0o644, b"kept");
        });
        let (g, r) = parse(&a);
        r.unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(
            (g[0].name.as_str(), &g[0].data[..]),
            ("after", &b"kept"[..])
        );
        // The longest name that fits is kept.
        let fits = "x".repeat(NAME_MAX - 1);
        assert_eq!(names(&build(|w| w.file(&fits, 0o644, b""))), [fits]);
    }

    #[test]
    fn errors() {
        let a = sample();
        assert_eq!(first_err(b"070707xxxx"), CpioError::BadMagic { offset: 0 });
        let mut bad = a.clone();
        bad[6 + 3] = b'g';
        assert_eq!(first_err(&bad), CpioError::BadField { offset: 6 });
        // Truncated in the header, the name and the data.
        assert_eq!(first_err(&a[..50]), CpioError::Truncated { offset: 0 });
        assert_eq!(first_err(&a[..112]), CpioError::Truncated { offset: 110 });
        let mut bad = a.clone();
        bad[6 + 8 * 11..6 + 8 * 12].copy_from_slice(b"0000ffff");
        assert!(matches!(first_err(&bad), CpioError::Truncated { .. }));
        let mut bad = a.clone();
        bad[6 + 8 * 6..6 + 8 * 7].copy_from_slice(b"ffffffff");
        assert!(matches!(first_err(&bad), CpioError::Truncated { .. }));
        let f = build(|w| w.file("f", 0o644, b"abcdef"));
        assert_eq!(first_err(&f[..114]), CpioError::Truncated { offset: 112 });
        // A name without its NUL, and an empty name.
        let mut bad = a.clone();
        bad[6 + 8 * 11..6 + 8 * 12].copy_from_slice(b"00000002");
        assert!(matches!(first_err(&bad), CpioError::BadName { .. }));
        let mut bad = a.clone();
        bad[6 + 8 * 11..6 + 8 * 12].copy_from_slice(b"00000000");
        assert!(matches!(first_err(&bad), CpioError::BadName { .. }));
        // Zero padding that leaves the next header unaligned.
        let mut bad = build(|w| w.file("f", 0o644, b""));
        let mut tail = vec![0u8; 2];
        tail.extend_from_slice(&a);
        bad.extend_from_slice(&tail);
        assert!(matches!(first_err(&bad), CpioError::BadPadding { .. }));
        // After an error, the same error.
        let mut p = Parser::new();
        let e = p.push(b"0garbage!", &mut |_| ()).unwrap_err();
        assert_eq!(p.push(&a, &mut |_| ()), Err(e));
        assert_eq!(p.finish(), Err(e));
        // Plain junk is the caller's; parse_all calls it bad magic.
        assert_eq!(
            parse_all(b"garbage!", &mut |_| ()),
            Err(CpioError::BadMagic { offset: 0 })
        );
    }

    /// Every prefix and many corruptions of a valid archive, pushed whole and in pieces: no
    /// panic, and Begin/Data/End stay well formed (checked in `parse_cut`).
    #[test]
    fn truncated_and_garbage_input_never_panics() {
        let a = sample();
        for n in 0..a.len() {
            let _ = parse(&a[..n]);
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
            let piece = rnd() as usize % (cut + 1);
            let _ = parse_cut(&b[..cut], &[piece]);
        }
        let mut junk = std::vec![0u8; 4096];
        for x in junk.iter_mut() {
            *x = rnd() as u8;
        }
        for n in [0, 1, 109, 110, 111, 500, 4096] {
            let _ = parse(&junk[..n]);
        }
    }
}
