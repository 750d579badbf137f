//! The data the bench stores: random text and email-like records, never a run of one repeated
//! character (which compresses, caches and scans unlike anything real).

#[path = "../../tests/common/rng.rs"]
mod rng;
use rng::Rng;

/// A generator for `seed`, which may be 0 (xorshift's state may not).
pub fn rng(seed: u64) -> Rng {
    Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
}

/// What an item holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One JSON string of random words, with punctuation, line breaks and some non-ASCII letters.
    Text,
    /// An object holding an array of email-like records with random fields.
    Records,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Records => "records",
        }
    }
}

/// Compact JSON of exactly `size` bytes of `kind`.
pub fn json(kind: Kind, size: usize, seed: u64) -> String {
    assert!(size >= 64);
    let mut rng = rng(seed);
    // Words come from a vocabulary, common ones more often, as in real text (which gzip shrinks about
    // threefold); each word is random letters.
    let vocabulary: Vec<String> = (0..2_000).map(|_| new_word(&mut rng)).collect();
    let words = &vocabulary[..];
    let mut out = String::with_capacity(size);
    match kind {
        Kind::Text => {
            out.push('"');
            let mut next = String::new();
            loop {
                next.clear();
                sentence(&mut rng, words, &mut next);
                next.push_str(if rng.below(8) == 0 { "\\n" } else { " " });
                if out.len() + next.len() + 1 > size {
                    break;
                }
                out.push_str(&next);
            }
            pad(&mut rng, &mut out, size - 1);
            out.push('"');
        }
        Kind::Records => {
            out.push_str(r#"{"emails":["#);
            let mut n = 0;
            loop {
                let mut record = format!(r#"{{"n":{n},"from":""#);
                word(&mut rng, words, &mut record);
                record.push_str(r#"@example.com","subject":""#);
                sentence(&mut rng, words, &mut record);
                record.push_str(r#"","body":""#);
                for _ in 0..1 + rng.below(4) {
                    sentence(&mut rng, words, &mut record);
                    record.push(' ');
                }
                record.push_str(r#""}"#);
                if out.len() + 1 + record.len() + 20 > size {
                    break;
                }
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&record);
                n += 1;
            }
            out.push_str(r#"],"pad":""#);
            pad(&mut rng, &mut out, size - 2);
            out.push_str(r#""}"#);
        }
    }
    assert_eq!(out.len(), size);
    out
}

/// A word of random letters, skewed towards the common ones, sometimes with an accent.
fn new_word(rng: &mut Rng) -> String {
    const LETTERS: &[u8] = b"etaoinshrdlucmfwypvbgkjqxz";
    let mut word: String = (0..2 + rng.below(8))
        .map(|_| LETTERS[rng.below(LETTERS.len()).min(rng.below(LETTERS.len()))] as char)
        .collect();
    if rng.below(40) == 0 {
        word.push('é');
    }
    word
}

/// A word of `words`, the first ones more often.
fn word(rng: &mut Rng, words: &[String], out: &mut String) {
    out.push_str(&words[rng.below(words.len()).min(rng.below(words.len()))]);
}

fn sentence(rng: &mut Rng, words: &[String], out: &mut String) {
    for i in 0..4 + rng.below(12) {
        if i > 0 {
            out.push(' ');
        }
        word(rng, words, out);
    }
    out.push('.');
}

/// Random letters up to exactly `len` bytes.
fn pad(rng: &mut Rng, out: &mut String, len: usize) {
    while out.len() < len {
        out.push((b'a' + rng.below(26) as u8) as char);
    }
}
