//! A document's bytes as text, whatever its encoding: a byte-order mark (UTF-8, UTF-16 LE or
//! BE) decides; else UTF-8 when the bytes are UTF-8; else, for HTML, the encoding the page
//! declares (`<meta charset>`, `<meta http-equiv="content-type">`, an XML declaration) in its
//! first 1,024 bytes, as browsers look for it; else the encoding Firefox's detector
//! (`chardetng`) guesses — Windows-1252 for Latin-1 text, and the other single- and multi-byte
//! encodings of the Web. Tables (CSV, JSON Lines, read a row at a time) take a byte-order mark
//! only ([`table_reader`]): a row that is not UTF-8 without one is a bad row, as before.

use std::io::{BufRead, Read};

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};

/// Bytes of an HTML document where its declared encoding is looked for (as the HTML standard's
/// prescan does).
const PRESCAN_BYTES: usize = 1024;

/// A document's text and the encoding it was read from, when not UTF-8 (its name, for the
/// summary).
pub(crate) struct Decoded {
    pub text: String,
    pub converted_from: Option<&'static str>,
}

/// `bytes` as text; `html` looks for a declared encoding. Refused: a document with NUL bytes
/// that no byte-order mark says is UTF-16 (a binary file, not text in some encoding).
pub(crate) fn decode(bytes: &[u8], html: bool) -> Result<Decoded, String> {
    if let Some((encoding, bom)) = Encoding::for_bom(bytes) {
        return Ok(with(encoding, &bytes[bom..]));
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Ok(Decoded {
            text: text.to_owned(),
            converted_from: None,
        });
    }
    if bytes.contains(&0) {
        return Err("not text (NUL bytes, and no byte-order mark saying UTF-16)".to_owned());
    }
    let declared = if html { declared(bytes) } else { None };
    // A page that says UTF-8 but is not: the detector knows better than the label.
    let encoding = match declared {
        Some(encoding) if encoding != UTF_8 => encoding,
        _ => {
            let mut detector = chardetng::EncodingDetector::new();
            detector.feed(bytes, true);
            detector.guess(None, true)
        }
    };
    Ok(with(encoding, bytes))
}

fn with(encoding: &'static Encoding, bytes: &[u8]) -> Decoded {
    let (text, _) = encoding.decode_without_bom_handling(bytes);
    Decoded {
        text: text.into_owned(),
        converted_from: (encoding != UTF_8).then_some(encoding.name()),
    }
}

/// The encoding an HTML document declares in its first bytes: `<meta charset="…">`,
/// `<meta http-equiv="Content-Type" content="…; charset=…">` or `<?xml … encoding="…"?>`. A
/// declared UTF-16 means UTF-8 (a page without a byte-order mark is not UTF-16, as browsers
/// read it).
fn declared(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(PRESCAN_BYTES)];
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    let label = ["charset=", "encoding="].iter().find_map(|key| {
        let at = head.find(key)? + key.len();
        let rest = head[at..].trim_start_matches(['"', '\'', ' ']);
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.:".contains(c)))
            .unwrap_or(rest.len());
        Some(rest[..end].to_owned())
    })?;
    let encoding = Encoding::for_label(label.as_bytes())?;
    Some(if encoding == UTF_16LE || encoding == UTF_16BE {
        UTF_8
    } else {
        encoding
    })
}

/// A table's bytes (`inner`), to be read a row at a time: a UTF-8 byte-order mark dropped, a
/// UTF-16 one (LE or BE) read as UTF-8 as it streams; anything else as it is (its rows must
/// be UTF-8).
pub(crate) fn table_reader<'a, R: Read + 'a>(inner: R) -> std::io::Result<Box<dyn BufRead + 'a>> {
    let mut reader = std::io::BufReader::with_capacity(256 << 10, inner);
    let start = reader.fill_buf()?;
    match Encoding::for_bom(start) {
        Some((encoding, _)) if encoding != UTF_8 => {
            let decoded = encoding_rs_io::DecodeReaderBytesBuilder::new()
                .encoding(Some(encoding))
                .strip_bom(true)
                .build(reader);
            Ok(Box::new(std::io::BufReader::with_capacity(
                256 << 10,
                decoded,
            )))
        }
        Some((_, bom)) => {
            reader.consume(bom);
            Ok(Box::new(reader))
        }
        None => Ok(Box::new(reader)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8], html: bool) -> (String, Option<&'static str>) {
        let d = decode(bytes, html).unwrap();
        (d.text, d.converted_from)
    }

    #[test]
    fn byte_order_marks_decide() {
        let mut le = vec![0xff, 0xfe];
        let mut be = vec![0xfe, 0xff];
        for unit in "Café\n".encode_utf16() {
            le.extend(unit.to_le_bytes());
            be.extend(unit.to_be_bytes());
        }
        assert_eq!(text(&le, false), ("Café\n".into(), Some("UTF-16LE")));
        assert_eq!(text(&be, false), ("Café\n".into(), Some("UTF-16BE")));
        assert_eq!(
            text(b"\xef\xbb\xbfCaf\xc3\xa9", false),
            ("Café".into(), None)
        );
    }

    #[test]
    fn latin_1_is_read_as_windows_1252() {
        let bytes = b"Le caf\xe9 est pr\xeat \xe0 servir, d\xe9j\xe0 chaud.";
        assert_eq!(
            text(bytes, false),
            (
                "Le café est prêt à servir, déjà chaud.".into(),
                Some("windows-1252")
            )
        );
    }

    #[test]
    fn an_html_page_declares_its_encoding() {
        // KOI8-R bytes, declared: the label wins over a guess.
        let page = b"<html><head><meta charset=\"koi8-r\"></head><body>\xf0\xd2\xc9\xd7\xc5\xd4</body></html>";
        assert_eq!(
            text(page, true).0,
            "<html><head><meta charset=\"koi8-r\"></head><body>Привет</body></html>"
        );
        let xml = b"<?xml version='1.0' encoding='ISO-8859-1'?><p>na\xefve</p>";
        assert_eq!(
            text(xml, true).0,
            "<?xml version='1.0' encoding='ISO-8859-1'?><p>naïve</p>"
        );
        let http = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\"><p>\x93q\x94</p>";
        assert!(text(http, true).0.ends_with("<p>\u{201c}q\u{201d}</p>"));
    }

    #[test]
    fn binary_is_refused() {
        assert!(decode(b"\x00\x01\x02\xff", false).is_err());
    }

    #[test]
    fn a_utf16_table_streams_as_utf8() {
        let mut le = vec![0xff, 0xfe];
        for unit in "id,text\na,café\n".encode_utf16() {
            le.extend(unit.to_le_bytes());
        }
        let mut out = String::new();
        table_reader(&le[..])
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "id,text\na,café\n");
        let mut out = Vec::new();
        table_reader(&b"\xef\xbb\xbfid\ncaf\xe9"[..])
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"id\ncaf\xe9", "no BOM but UTF-8's: bytes as they are");
    }
}
