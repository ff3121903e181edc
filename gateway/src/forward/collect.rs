//! A request body collected whole, held once. The gateway reads a body before deciding
//! (routing, authorization and the body check read the bytes the backend will run), so each
//! body in flight is in memory; this keeps it there once, not once plus the copies a growing
//! buffer leaves behind:
//! - a body that comes in one read is handed on as read (pingora's chunk, no copy);
//! - a body of declared length (`Content-Length`, within `max-body-bytes`) is copied once, into
//!   a buffer of exactly that size allocated at its second chunk (before, a buffer grown by
//!   doubling copied the body about twice over and held up to twice its size, plus the
//!   halves it had outgrown);
//! - only a body of unknown length (chunked) grows as it comes.
//!
//! The bytes collected are the bytes read, in order: what is checked is what is forwarded.

use bytes::{Bytes, BytesMut};

/// The body length the request declares: its `Content-Length`, unless `Transfer-Encoding`
/// makes the chunks say it (then unknown).
pub fn declared(headers: &http::HeaderMap) -> Option<u64> {
    if headers.contains_key(http::header::TRANSFER_ENCODING) {
        return None;
    }
    headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Adds `chunk` to the body collected so far in `buf` (empty, without capacity, before the
/// first chunk). The first chunk is kept as it is, without a copy; at the second, a body of
/// declared length within `max` gets one buffer of that length, which the rest fills without
/// growing. (The caller refuses a body past `max`; `declared` is only a size hint, asked for
/// past the first chunk only, so a body in one read looks at no header; a body that turns out
/// longer still collects whole.)
pub fn append(buf: &mut BytesMut, chunk: Bytes, declared: impl FnOnce() -> Option<u64>, max: u64) {
    if chunk.is_empty() {
        return;
    }
    if buf.is_empty() && buf.capacity() == 0 {
        // unique (pingora's own copy of the read): becomes the buffer without a copy
        *buf = BytesMut::from(chunk);
        return;
    }
    let wanted = declared()
        .filter(|&d| d <= max)
        .and_then(|d| usize::try_from(d).ok())
        .unwrap_or(0);
    let needed = buf.len() + chunk.len();
    if buf.capacity() < needed && wanted >= needed {
        // one allocation of the declared size, the chunks so far copied in once
        let mut sized = BytesMut::with_capacity(wanted);
        sized.extend_from_slice(buf);
        *buf = sized;
    }
    buf.extend_from_slice(&chunk);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(len: usize, size: usize) -> Vec<Bytes> {
        let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        body.chunks(size).map(Bytes::copy_from_slice).collect()
    }

    #[test]
    fn a_declared_body_is_one_allocation_of_its_size_filled_without_growing() {
        let len = 4 * 1024 * 1024 - 1024;
        let parts = chunks(len, 64 * 1024);
        let mut buf = BytesMut::new();
        let mut at = None;
        for (i, c) in parts.iter().enumerate() {
            append(&mut buf, c.clone(), || Some(len as u64), 4 * 1024 * 1024);
            if i == 1 {
                assert_eq!(buf.capacity(), len, "sized at the second chunk");
                at = Some(buf.as_ptr());
            }
            // never reallocated (a grown buffer would move and leave its old copy behind)
            assert!(i < 1 || at == Some(buf.as_ptr()), "moved at chunk {i}");
        }
        assert_eq!(buf.capacity(), len);
        let whole = buf.freeze();
        assert_eq!(whole.len(), len);
        assert_eq!(whole, parts.concat());
    }

    #[test]
    fn a_body_in_one_read_is_handed_on_without_a_copy() {
        let chunk = Bytes::copy_from_slice(&[7u8; 1000]);
        let ptr = chunk.as_ptr();
        let mut buf = BytesMut::new();
        append(&mut buf, chunk, || Some(1000), 4096);
        let whole = buf.freeze();
        assert_eq!(whole.as_ptr(), ptr);
        assert_eq!(&whole[..], &[7u8; 1000][..]);
    }

    #[test]
    fn an_undeclared_or_understated_body_still_collects_whole_in_order() {
        for declared in [None, Some(10), Some(u64::MAX)] {
            let parts = chunks(300_000, 65_536);
            let mut buf = BytesMut::new();
            for c in &parts {
                append(&mut buf, c.clone(), || declared, 1 << 20);
            }
            assert_eq!(buf.freeze(), parts.concat(), "{declared:?}");
        }
        let mut buf = BytesMut::new();
        append(&mut buf, Bytes::new(), || Some(3), 10);
        append(&mut buf, Bytes::from_static(b"ab"), || Some(3), 10);
        append(&mut buf, Bytes::from_static(b"c"), || Some(3), 10);
        assert_eq!(&buf[..], b"abc");
    }

    #[test]
    fn a_declared_size_past_the_limit_is_not_allocated() {
        let mut buf = BytesMut::new();
        append(&mut buf, Bytes::from_static(b"ab"), || Some(1 << 40), 1024);
        append(&mut buf, Bytes::from_static(b"cd"), || Some(1 << 40), 1024);
        assert!(buf.capacity() < 1024);
        assert_eq!(&buf[..], b"abcd");
    }

    #[test]
    fn the_declared_length_is_content_length_unless_chunked() {
        let mut h = http::HeaderMap::new();
        assert_eq!(declared(&h), None);
        h.insert(http::header::CONTENT_LENGTH, "4096".parse().unwrap());
        assert_eq!(declared(&h), Some(4096));
        h.insert(http::header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        assert_eq!(declared(&h), None);
    }
}
