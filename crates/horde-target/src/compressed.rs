//! `/compressed`: a page worth compressing, sent gzip-encoded to clients that accept it, so
//! that decoding (and bytes on the wire against bytes decoded) can be tested.

use crate::server::{full, Body};
use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use hyper::header::{HeaderMap, HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, VARY};
use hyper::Response;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::OnceLock;

/// A phrase the page carries, for checks to look for.
pub const PHRASE: &str = "horde compressed page";

/// Rows of the page: about 5 KiB of repetitive HTML, which gzip shrinks about tenfold.
const ROWS: usize = 48;

/// The page, plain and gzipped, made once: every request gets the same bytes.
fn bodies() -> &'static (Bytes, Bytes) {
    static BODIES: OnceLock<(Bytes, Bytes)> = OnceLock::new();
    BODIES.get_or_init(|| {
        let mut html = format!(
            "<!DOCTYPE html>\n<html><head><title>Compressed</title></head><body>\n<h1 class=\"title\">{PHRASE}</h1>\n"
        );
        for row in 1..=ROWS {
            let _ = writeln!(html, "<p class=\"row\">Row {row} of the {PHRASE}: the same words again and again.</p>");
        }
        html.push_str("</body></html>\n");
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(html.as_bytes()).expect("writing to a Vec cannot fail");
        let gzipped = encoder.finish().expect("writing to a Vec cannot fail");
        (Bytes::from(html), Bytes::from(gzipped))
    })
}

pub(crate) fn response(request_headers: &HeaderMap) -> Response<Body> {
    let (plain, gzipped) = bodies();
    let gzip = accepts_gzip(request_headers);
    let mut response = Response::new(full(if gzip { gzipped.clone() } else { plain.clone() }));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    // Caches must keep the two versions apart.
    headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
    if gzip {
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    response
}

/// Whether Accept-Encoding allows gzip (RFC 9110, 12.5.3): `gzip` (or its old alias `x-gzip`)
/// with a non-zero weight, or else `*` with one. No header means plain: clients that decode
/// nothing (wrk, curl without --compressed) send none.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut gzip: Option<bool> = None;
    let mut any: Option<bool> = None;
    let elements = headers.get_all(ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(','));
    for element in elements {
        let mut parts = element.split(';');
        let coding = parts.next().unwrap_or_default().trim();
        let weight = parts
            .find_map(|parameter| {
                let (name, value) = parameter.split_once('=')?;
                // A weight that does not parse allows nothing rather than everything.
                name.trim().eq_ignore_ascii_case("q").then(|| value.trim().parse::<f32>().unwrap_or(0.0))
            })
            .unwrap_or(1.0);
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(gzip.unwrap_or(false) || weight > 0.0);
        } else if coding == "*" {
            any = Some(any.unwrap_or(false) || weight > 0.0);
        }
    }
    gzip.or(any).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    fn accepts(values: &[&str]) -> bool {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
        }
        accepts_gzip(&headers)
    }

    #[test]
    fn gzip_is_chosen_only_when_the_request_allows_it() {
        assert!(accepts(&["gzip"]));
        assert!(accepts(&["gzip, deflate, br, zstd"]));
        assert!(accepts(&["br;q=1.0, GZIP;q=0.5"]));
        assert!(accepts(&["x-gzip"]));
        assert!(accepts(&["identity", "gzip"]));
        assert!(accepts(&["*"]));
        assert!(accepts(&["br, *;q=0.1"]));
        assert!(!accepts(&[]));
        assert!(!accepts(&["identity"]));
        assert!(!accepts(&["br, zstd"]));
        assert!(!accepts(&["gzip;q=0"]));
        assert!(!accepts(&["gzip;q=0.000, *"]));
        assert!(!accepts(&["*;q=0"]));
        assert!(!accepts(&["gzip;q=nonsense"]));
    }

    #[test]
    fn the_gzipped_page_is_the_plain_page() {
        let (plain, gzipped) = bodies();
        assert!(plain.len() > 4096, "{}", plain.len());
        assert!(gzipped.len() * 5 < plain.len(), "{} of {}", gzipped.len(), plain.len());
        let mut decoded = Vec::new();
        GzDecoder::new(&gzipped[..]).read_to_end(&mut decoded).unwrap();
        assert_eq!(decoded, plain[..]);
        assert!(std::str::from_utf8(plain).unwrap().contains(PHRASE));
    }
}
