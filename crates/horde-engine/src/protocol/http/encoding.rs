//! Compressed response bodies: gzip, deflate, br and zstd, decoded when something reads the body
//! (a check, a save_as) and only then. A body nobody reads is counted on the wire and dropped as
//! it arrives, never decompressed. Decoding is bounded like keeping a body is: a body that
//! decodes to more than the plan's `max_body_bytes` is a KO `body_too_large`, so a small
//! compressed bomb cannot take the load generator's memory.

use crate::failure::Failure;
use bytes::Bytes;
use http::header::HeaderValue;
use std::io::Read;

/// The body as the server meant it, with the codings of `content_encoding` undone (the last
/// applied is undone first, RFC 9110 8.4). `identity` and an empty header leave it as it is.
pub fn decode(body: Bytes, content_encoding: &HeaderValue, limit: u64) -> Result<Bytes, Failure> {
    let text =
        content_encoding.to_str().map_err(|_| Failure::new("invalid_encoding", "Content-Encoding is not text"))?;
    let mut body = body;
    for coding in text.rsplit(',').map(str::trim).filter(|c| !c.is_empty()) {
        body = match coding.to_ascii_lowercase().as_str() {
            "identity" => body,
            "gzip" | "x-gzip" => bounded(flate2::read::MultiGzDecoder::new(&body[..]), coding, limit)?,
            // RFC 9110 says zlib-wrapped; some servers send raw deflate, as browsers accept.
            "deflate" => match bounded(flate2::read::ZlibDecoder::new(&body[..]), coding, limit) {
                Err(failure) if failure.kind == "invalid_encoding" => {
                    bounded(flate2::read::DeflateDecoder::new(&body[..]), coding, limit)?
                }
                other => other?,
            },
            "br" => bounded(brotli_decompressor::Decompressor::new(&body[..], 4096), coding, limit)?,
            "zstd" => bounded(ZstdFrames { rest: &body[..], frame: None }, coding, limit)?,
            other => {
                return Err(Failure::new(
                    "invalid_encoding",
                    format!("Content-Encoding {other:?} is not one horde decodes (gzip, deflate, br, zstd)"),
                ))
            }
        };
    }
    Ok(body)
}

/// A zstd body's frames, decoded one after the other: RFC 8878 lets a body hold several, as
/// the reference decoder reads them. Pure Rust (ruzstd): the C library took 15 s of every
/// build for a coding few servers send.
struct ZstdFrames<'a> {
    /// What follows the frame being decoded.
    rest: &'a [u8],
    frame: Option<ruzstd::decoding::StreamingDecoder<&'a [u8], ruzstd::decoding::FrameDecoder>>,
}

impl Read for ZstdFrames<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if let Some(frame) = &mut self.frame {
                let read = frame.read(buf)?;
                if read > 0 || buf.is_empty() {
                    return Ok(read);
                }
                self.rest = self.frame.take().map(|frame| frame.into_inner()).unwrap_or_default();
            }
            if self.rest.is_empty() {
                return Ok(0);
            }
            let frame = ruzstd::decoding::StreamingDecoder::new(self.rest)
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err.to_string()))?;
            self.frame = Some(frame);
        }
    }
}

/// Reads `decoder` to its end, or fails past `limit` bytes.
fn bounded(decoder: impl Read, coding: &str, limit: u64) -> Result<Bytes, Failure> {
    let mut decoded = Vec::new();
    decoder
        .take(limit.saturating_add(1))
        .read_to_end(&mut decoded)
        .map_err(|err| Failure::new("invalid_encoding", format!("{coding} body does not decode: {err}")))?;
    if decoded.len() as u64 > limit {
        return Err(Failure::new(
            "body_too_large",
            format!(
                "the {coding} body decodes to more than {limit} bytes, the most a check may read (protocol max_body_bytes)"
            ),
        ));
    }
    Ok(Bytes::from(decoded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const TEXT: &[u8] = b"<html>the same page, compressed four ways, and decoded back</html>";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    fn decoded(body: Vec<u8>, coding: &'static str) -> Result<Bytes, Failure> {
        decode(Bytes::from(body), &HeaderValue::from_static(coding), 1 << 20)
    }

    #[test]
    fn each_coding_decodes_to_the_original() {
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zlib.write_all(TEXT).unwrap();
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        raw.write_all(TEXT).unwrap();
        let mut br = Vec::new();
        brotli::BrotliCompress(&mut &TEXT[..], &mut br, &Default::default()).unwrap();
        let zstd = zstd(TEXT);
        assert_eq!(&decoded(gzip(TEXT), "gzip").unwrap()[..], TEXT);
        assert_eq!(&decoded(zlib.finish().unwrap(), "deflate").unwrap()[..], TEXT);
        assert_eq!(&decoded(raw.finish().unwrap(), "deflate").unwrap()[..], TEXT);
        assert_eq!(&decoded(br, "br").unwrap()[..], TEXT);
        assert_eq!(&decoded(zstd, "zstd").unwrap()[..], TEXT);
        assert_eq!(&decoded(TEXT.to_vec(), "identity").unwrap()[..], TEXT);
    }

    #[test]
    fn stacked_codings_are_undone_last_first() {
        let twice = gzip(&zstd(TEXT));
        assert_eq!(&decoded(twice, "zstd, gzip").unwrap()[..], TEXT);
    }

    #[test]
    fn a_zstd_body_of_several_frames_decodes_whole_and_garbage_is_a_ko() {
        let mut frames = zstd(b"first frame, ");
        frames.extend(zstd(b"second frame"));
        assert_eq!(&decoded(frames, "zstd").unwrap()[..], b"first frame, second frame");
        assert_eq!(decoded(b"not zstd at all".to_vec(), "zstd").unwrap_err().kind, "invalid_encoding");
        let bomb = zstd(&vec![0u8; 10 << 20]);
        assert!(bomb.len() < 100_000);
        let failure = decode(Bytes::from(bomb), &HeaderValue::from_static("zstd"), 1 << 20).unwrap_err();
        assert_eq!(failure.kind, "body_too_large");
    }

    #[test]
    fn a_bomb_stops_at_the_limit_and_garbage_is_a_ko() {
        let bomb = gzip(&vec![0u8; 10 << 20]);
        assert!(bomb.len() < 20_000);
        let failure = decode(Bytes::from(bomb), &HeaderValue::from_static("gzip"), 1 << 20).unwrap_err();
        assert_eq!(failure.kind, "body_too_large");
        assert_eq!(decoded(b"not gzip at all".to_vec(), "gzip").unwrap_err().kind, "invalid_encoding");
        assert_eq!(decoded(TEXT.to_vec(), "compress").unwrap_err().kind, "invalid_encoding");
    }
}
