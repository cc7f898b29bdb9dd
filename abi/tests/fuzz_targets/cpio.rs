//! newc archives: the one-shot reader, the push parser fed in pieces, and the writer.

use super::util::{offset_in, span, Rng, Take};
use std::string::String;
use std::vec;
use std::vec::Vec;
use svelt_abi::boot::cpio::*;

/// An event with its data copied, Data pieces merged (they may be split anywhere).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    Begin(String, [u32; 11]),
    Data(Vec<u8>),
    End,
}

fn record(out: &mut Vec<Ev>, e: Event) {
    match e {
        Event::Begin(h) => out.push(Ev::Begin(
            h.name.into(),
            [
                h.ino,
                h.mode,
                h.uid,
                h.gid,
                h.nlink,
                h.mtime,
                h.size,
                h.dev_major,
                h.dev_minor,
                h.rdev_major,
                h.rdev_minor,
            ],
        )),
        Event::Data(d) => {
            assert!(!d.is_empty(), "empty Data event");
            if let Some(Ev::Data(prev)) = out.last_mut() {
                prev.extend_from_slice(d);
            } else {
                out.push(Ev::Data(d.to_vec()));
            }
        }
        Event::End => out.push(Ev::End),
    }
}

/// Feeds `input` in pieces whose sizes come from `rng` (0 = the whole rest at once), to a
/// parser starting at `base`. Returns the events, and the push result: Ok(consumed) when the
/// parser stopped at something that is not an archive (or consumed everything), or the error.
fn push_in_pieces(
    input: &[u8],
    base: u64,
    rng: &mut Rng,
    max_piece: usize,
) -> (Vec<Ev>, Result<usize, CpioError>, Parser) {
    let mut p = Parser::starting_at(base);
    let mut evs = Vec::new();
    let mut at = 0;
    let whole = span(input);
    loop {
        let n = if max_piece == 0 {
            input.len() - at
        } else {
            (1 + rng.below(max_piece)).min(input.len() - at)
        };
        let piece = &input[at..at + n];
        let r = p.push(piece, &mut |e| {
            if let Event::Data(d) = e {
                // Data is borrowed from the input, not copied.
                assert!(
                    offset_in(whole, d).is_some(),
                    "Data not borrowed from the input"
                );
            }
            record(&mut evs, e)
        });
        match r {
            Ok(k) => {
                assert!(k <= n);
                assert_eq!(p.pos(), base + (at + k) as u64);
                at += k;
                if k < n || at == input.len() {
                    return (evs, Ok(at), p);
                }
            }
            Err(e) => {
                // After an error, every call gives it again.
                assert_eq!(
                    p.push(b"070701", &mut |_| panic!("event after an error")),
                    Err(e)
                );
                assert_eq!(p.finish(), Err(e));
                return (evs, Err(e), p);
            }
        }
    }
}

fn shift(e: CpioError, by: usize) -> CpioError {
    match e {
        CpioError::BadMagic { offset } => CpioError::BadMagic {
            offset: offset + by,
        },
        CpioError::BadField { offset } => CpioError::BadField {
            offset: offset + by,
        },
        CpioError::Truncated { offset } => CpioError::Truncated {
            offset: offset + by,
        },
        CpioError::BadName { offset } => CpioError::BadName {
            offset: offset + by,
        },
        CpioError::BadPadding { offset } => CpioError::BadPadding {
            offset: offset + by,
        },
    }
}

fn offset_of(e: CpioError) -> usize {
    match e {
        CpioError::BadMagic { offset }
        | CpioError::BadField { offset }
        | CpioError::Truncated { offset }
        | CpioError::BadName { offset }
        | CpioError::BadPadding { offset } => offset,
    }
}

/// Members well formed: Begin, its data (exactly `size` bytes), End; only the last member of
/// an unfinished parse may lack its end.
fn check_stream(evs: &[Ev], complete: bool) {
    let mut i = 0;
    while i < evs.len() {
        let Ev::Begin(name, f) = &evs[i] else {
            panic!("stream does not start a member with Begin: {:?}", evs[i]);
        };
        assert!(!name.starts_with('/') && !name.starts_with("./") && name != ".");
        assert!(!name.contains('\0'));
        let size = f[6] as usize;
        i += 1;
        let mut got = 0;
        if let Some(Ev::Data(d)) = evs.get(i) {
            got = d.len();
            i += 1;
        }
        match evs.get(i) {
            Some(Ev::End) => {
                assert_eq!(got, size, "member data length differs from its size");
                i += 1;
            }
            None => {
                assert!(!complete, "last member not ended");
                assert!(got < size || size == 0);
            }
            Some(e) => panic!("unexpected {e:?}"),
        }
    }
}

/// The cpio readers on arbitrary bytes.
///
/// Input: a byte seeding the piece sizes, then the archive.
///
/// Asserts: `parse_all` and the push parser fed in random pieces (and byte by byte, for
/// short inputs) report the same members and the same error at the same offset; a parser
/// started at offset 4k reports the same members with offsets shifted by 4k; data comes
/// borrowed from the input, each member's data is exactly its size; positions and error
/// offsets stay inside the input; after an error the parser keeps returning it.
pub fn cpio(data: &[u8]) {
    let mut t = Take::new(data);
    let mut rng = Rng(u64::from(t.u8()));
    let input = t.rest();

    let mut all = Vec::new();
    let whole = span(input);
    let r = parse_all(input, &mut |e| {
        if let Event::Data(d) = e {
            assert!(offset_in(whole, d).is_some());
        }
        record(&mut all, e)
    });
    check_stream(&all, r.is_ok());
    if let Err(e) = r {
        assert!(offset_of(e) <= input.len(), "{e:?} past the input");
    }

    let (evs, pr, p) = push_in_pieces(input, 0, &mut rng, 0);
    assert_eq!(evs, all);
    let one_shot = match pr {
        Ok(n) if n < input.len() => {
            // Stopped at a non-archive byte: parse_all calls that BadMagic there.
            assert_ne!(input[n], 0);
            assert_ne!(input[n], b'0');
            Err(CpioError::BadMagic { offset: n })
        }
        Ok(_) => p.finish(),
        Err(e) => Err(e),
    };
    assert_eq!(one_shot, r);

    for max_piece in [7, 300] {
        let (evs2, pr2, _) = push_in_pieces(input, 0, &mut rng, max_piece);
        assert_eq!(evs2, evs, "pieces of at most {max_piece}");
        assert_eq!(pr2, pr);
    }
    if input.len() <= 2048 {
        let (evs2, pr2, _) = push_in_pieces(input, 0, &mut rng, 1);
        assert_eq!(evs2, evs, "byte by byte");
        assert_eq!(pr2, pr);
    }
    let base = 4 * (1 + rng.below(1000));
    let (evs3, pr3, _) = push_in_pieces(input, base as u64, &mut rng, 0);
    assert_eq!(evs3, evs);
    assert_eq!(pr3, pr.map_err(|e| shift(e, base)));
}

/// The writer's output read back.
///
/// Input: entry descriptions (kind, permissions, name, data).
///
/// Asserts: the archive is a multiple of 512 bytes, `len()` counts it, and the reader gives
/// back every entry in order with its name (leading `/` and `./` dropped), type, permissions,
/// inode number, link count, device numbers and data; names too long for the reader are
/// skipped as the kernel's unpacker skips them.
pub fn cpio_writer(data: &[u8]) {
    let mut t = Take::new(data);
    let n = usize::from(t.u8() % 16);
    struct Ent {
        name: String,
        mode: u32,
        data: Vec<u8>,
        rdev: (u32, u32),
    }
    let mut ents = Vec::new();
    const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789._-/";
    for _ in 0..n {
        let kind = t.u8();
        let perm = u32::from(t.u16()) & 0o7777;
        let name_len = usize::from(t.u8());
        let mut name: String = t
            .bytes(name_len)
            .iter()
            .map(|&b| ALPHA[usize::from(b) % ALPHA.len()] as char)
            .collect();
        if kind & 0x80 != 0 {
            // Longer than PATH_MAX: skipped by the reader.
            name = "x".repeat(NAME_MAX + usize::from(kind & 3));
        }
        if name.is_empty() || name == TRAILER {
            name.push('n');
        }
        let (mode, data, rdev) = match kind % 4 {
            0 => (S_IFDIR | perm, vec![], (0, 0)),
            1 => {
                let len = usize::from(t.u16() % 600);
                (S_IFREG | perm, t.bytes(len).to_vec(), (0, 0))
            }
            2 => {
                let len = usize::from(t.u8());
                let target: Vec<u8> = t
                    .bytes(len)
                    .iter()
                    .map(|&b| ALPHA[usize::from(b) % ALPHA.len()])
                    .collect();
                (S_IFLNK | 0o777, target, (0, 0))
            }
            _ => (S_IFCHR | perm, vec![], (t.u32(), t.u32())),
        };
        ents.push(Ent {
            name,
            mode,
            data,
            rdev,
        });
    }
    let mut out = Vec::new();
    let mut w = Writer::new(|b: &[u8]| out.extend_from_slice(b));
    for e in &ents {
        match e.mode & S_IFMT {
            S_IFDIR => w.dir(&e.name, e.mode & 0o7777),
            S_IFREG => w.file(&e.name, e.mode & 0o7777, &e.data),
            S_IFLNK => w.symlink(&e.name, core::str::from_utf8(&e.data).unwrap()),
            _ => w.device(&e.name, S_IFCHR, e.mode & 0o7777, e.rdev.0, e.rdev.1),
        }
    }
    let written = w.len();
    let _ = w.finish();
    assert!(out.len() >= written && out.len().is_multiple_of(512));

    let mut evs = Vec::new();
    parse_all(&out, &mut |e| record(&mut evs, e)).expect("the writer's archive refused");
    check_stream(&evs, true);
    let mut want = Vec::new();
    for (i, e) in ents.iter().enumerate() {
        if e.name.len() + 1 > NAME_MAX {
            continue;
        }
        let mut name = e.name.as_str();
        loop {
            if let Some(r) = name.strip_prefix("./") {
                name = r;
            } else if let Some(r) = name.strip_prefix('/') {
                name = r;
            } else {
                break;
            }
        }
        if name == "." {
            name = "";
        }
        let nlink = if e.mode & S_IFMT == S_IFDIR { 2 } else { 1 };
        want.push(Ev::Begin(
            name.into(),
            [
                i as u32 + 1,
                e.mode,
                0,
                0,
                nlink,
                0,
                e.data.len() as u32,
                0,
                0,
                e.rdev.0,
                e.rdev.1,
            ],
        ));
        if !e.data.is_empty() {
            want.push(Ev::Data(e.data.clone()));
        }
        want.push(Ev::End);
    }
    assert_eq!(evs, want);
    // Feeding the same archive through the fuzzed-reader checks too.
    let mut v = vec![data.first().copied().unwrap_or(0)];
    v.extend_from_slice(&out);
    cpio(&v);
}

fn sample() -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(|b: &[u8]| out.extend_from_slice(b));
    w.dir("dev", 0o755);
    w.device("dev/console", S_IFCHR, 0o600, 5, 1);
    w.file("init", 0o755, b"\x7fELF\x02\x01\x01\0 fake init");
    w.file("etc/empty", 0o644, b"");
    w.symlink("bin/sh", "/init");
    w.file("./odd/name", 0o4755, &[0xa5; 37]);
    let _ = w.finish();
    out
}

pub fn seeds() -> Vec<Vec<u8>> {
    let a = sample();
    // Two archives back to back with zero padding between, then one followed by other data.
    let mut two = vec![3];
    two.extend_from_slice(&a);
    two.extend_from_slice(&[0; 12]);
    two.extend_from_slice(&a);
    let mut tail = vec![9];
    tail.extend_from_slice(&a);
    tail.extend_from_slice(b"\x1f\x8b\x08 gzip follows");
    // An archive using the 070702 magic.
    let mut crc = vec![1];
    crc.extend_from_slice(&a);
    crc[1 + 5] = b'2';
    vec![[vec![0], a].concat(), two, tail, crc]
}

pub fn writer_seeds() -> Vec<Vec<u8>> {
    let mut v = vec![5];
    // dir "d", file "d/f" with data, symlink "l", device "c", file with a long name.
    v.extend_from_slice(&[0, 0xed, 0x01, 1, 3]);
    v.extend_from_slice(&[
        1, 0xa4, 0x01, 3, 3, 39, 5, 5, 0, b'h', b'e', b'l', b'l', b'o',
    ]);
    v.extend_from_slice(&[2, 0, 0, 1, 11, 4, 0, 1, 2, 3]);
    v.extend_from_slice(&[3, 0x80, 0x01, 1, 2, 4, 0, 0, 0, 64, 0, 0, 0]);
    v.extend_from_slice(&[0x81, 0xa4, 0x01, 0, 2, 0]);
    vec![v]
}
