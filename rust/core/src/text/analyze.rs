//! The tokens of the BM25F scorer (docs/spec.md §12.1): each white-space
//! delimited piece of a text, folded, is segmented into Unicode (UAX #29)
//! words; the words holding a letter or a digit are tokens, stemmed when the
//! language has a stemmer; a word joined by punctuation (`React.memo`,
//! `foo_bar`) also yields its runs of letters and digits; a run of Han, kana
//! or Hangul characters, which carries no spaces, also yields its
//! overlapping character bigrams.
//!
//! Tokens are made from pieces, never across white space, so the index
//! builds them from its vocabulary of folded pieces (each distinct piece is
//! analysed once), and a query is analysed the same way.

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_script::{Script, UnicodeScript};
use unicode_segmentation::UnicodeSegmentation;

use super::fold_into;

/// The languages of the analyzer: each has a Snowball stemmer and a stop
/// word list (docs/spec.md §12.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Arabic,
    Danish,
    Dutch,
    English,
    Finnish,
    French,
    German,
    Greek,
    Hungarian,
    Italian,
    Norwegian,
    Portuguese,
    Romanian,
    Russian,
    Spanish,
    Swedish,
    Tamil,
    Turkish,
}

impl Language {
    /// Every language, by name.
    pub const ALL: [Language; 18] = [
        Language::Arabic,
        Language::Danish,
        Language::Dutch,
        Language::English,
        Language::Finnish,
        Language::French,
        Language::German,
        Language::Greek,
        Language::Hungarian,
        Language::Italian,
        Language::Norwegian,
        Language::Portuguese,
        Language::Romanian,
        Language::Russian,
        Language::Spanish,
        Language::Swedish,
        Language::Tamil,
        Language::Turkish,
    ];

    pub fn name(self) -> &'static str {
        self.parts().0
    }

    /// The language called `name` (lower case, as [`Language::name`]).
    pub fn from_name(name: &str) -> Option<Language> {
        Language::ALL.into_iter().find(|l| l.name() == name)
    }

    /// Its name, its Snowball algorithm and the ISO 639-1 code of its stop
    /// word list.
    fn parts(self) -> (&'static str, Algorithm, &'static str) {
        match self {
            Language::Arabic => ("arabic", Algorithm::Arabic, "ar"),
            Language::Danish => ("danish", Algorithm::Danish, "da"),
            Language::Dutch => ("dutch", Algorithm::Dutch, "nl"),
            Language::English => ("english", Algorithm::English, "en"),
            Language::Finnish => ("finnish", Algorithm::Finnish, "fi"),
            Language::French => ("french", Algorithm::French, "fr"),
            Language::German => ("german", Algorithm::German, "de"),
            Language::Greek => ("greek", Algorithm::Greek, "el"),
            Language::Hungarian => ("hungarian", Algorithm::Hungarian, "hu"),
            Language::Italian => ("italian", Algorithm::Italian, "it"),
            Language::Norwegian => ("norwegian", Algorithm::Norwegian, "no"),
            Language::Portuguese => ("portuguese", Algorithm::Portuguese, "pt"),
            Language::Romanian => ("romanian", Algorithm::Romanian, "ro"),
            Language::Russian => ("russian", Algorithm::Russian, "ru"),
            Language::Spanish => ("spanish", Algorithm::Spanish, "es"),
            Language::Swedish => ("swedish", Algorithm::Swedish, "sv"),
            Language::Tamil => ("tamil", Algorithm::Tamil, "ta"),
            Language::Turkish => ("turkish", Algorithm::Turkish, "tr"),
        }
    }

    /// The language's stop words (NLTK's list, shipped by the `stop-words`
    /// crate), as written there (lower case).
    pub fn stop_words(self) -> &'static [&'static str] {
        stop_words::lookup(self.parts().2).unwrap_or(&[])
    }
}

/// How a text becomes tokens: with the stemmer of a language, or none.
pub struct Analyzer {
    language: Option<Language>,
    stemmer: Option<Stemmer>,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("language", &self.language)
            .finish()
    }
}

impl Analyzer {
    /// An analyzer that stems with `language`'s stemmer; none without one.
    pub fn new(language: Option<Language>) -> Analyzer {
        Analyzer {
            language,
            stemmer: language.map(|l| Stemmer::create(l.parts().1)),
        }
    }

    pub fn language(&self) -> Option<Language> {
        self.language
    }

    /// `language`'s name, or `none`: what a cache file records.
    pub fn name(&self) -> &'static str {
        self.language.map_or("none", Language::name)
    }

    /// Call `f` with each token of `piece`, which holds no white space and is
    /// already folded (docs/spec.md §3), and whether the token is a word
    /// (rather than a bigram), with the word before stemming. Tokens come in
    /// text order: the piece's words, then its bigrams.
    pub fn for_each_token(&self, piece: &str, mut f: impl FnMut(Token<'_>)) {
        if piece.is_ascii() {
            // Letters and digits (they join, rules WB5 and WB8–WB10), alone
            // or between punctuation that joins nothing at either end (all
            // but `_`, rules WB13a–b; the rest join only between letters or
            // digits, WB6–WB7, WB11–WB12): one word, no bigram, as in most of
            // a vocabulary's pieces (`data`, `data,`, `(vacuum)`).
            let b = piece.as_bytes();
            let lo = b.iter().position(|&c| c == b'_' || alnum(c));
            let hi = b.iter().rposition(|&c| c == b'_' || alnum(c));
            if let (Some(lo), Some(hi)) = (lo, hi) {
                if b[lo..=hi].iter().all(|&c| alnum(c)) {
                    let core = &piece[lo..=hi];
                    f(Token {
                        text: self.stem(core),
                        word: Some(core),
                    });
                    return;
                }
            }
            // The same words, segmented by the rules' ASCII cases (a test
            // holds it equal to the segmentation crate's on random text).
            self.ascii_tokens(piece, &mut f);
            return; // no Han, kana or Hangul: no bigram
        }
        for w in piece.unicode_words() {
            self.word_tokens(w, &mut f);
        }
        let mut prev: Option<(usize, char)> = None;
        for (i, c) in piece.char_indices() {
            if !is_cjk(c) {
                prev = None;
                continue;
            }
            if let Some((start, _)) = prev {
                f(Token {
                    text: Cow::Borrowed(&piece[start..i + c.len_utf8()]),
                    word: None,
                });
            }
            prev = Some((i, c));
        }
    }

    /// A word's tokens: itself, and its letter-and-digit runs when it holds
    /// anything else.
    fn word_tokens<'a>(&self, w: &'a str, f: &mut impl FnMut(Token<'a>)) {
        f(Token {
            text: self.stem(w),
            word: Some(w),
        });
        // A word joined by punctuation (`React.memo`, `foo_bar`, `3.14`)
        // also yields its letter-and-digit runs.
        if w.chars().any(|c| !c.is_alphanumeric()) {
            for sub in w
                .split(|c: char| !c.is_alphanumeric())
                .filter(|s| !s.is_empty())
            {
                f(Token {
                    text: self.stem(sub),
                    word: Some(sub),
                });
            }
        }
    }

    /// [`Analyzer::word_tokens`] of each UAX #29 word of an ASCII text
    /// without white space that holds a letter or a digit: rules WB5–WB13b
    /// over ASCII classes, every other pair broken (WB999). One pass over
    /// the bytes: a letter or digit after another joins without the rules.
    fn ascii_tokens<'a>(&self, piece: &'a str, f: &mut impl FnMut(Token<'a>)) {
        let b = piece.as_bytes();
        let mut start = 0;
        while start < b.len() {
            let mut i = start + 1;
            while i < b.len() && ((alnum(b[i]) && alnum(b[i - 1])) || joined(b, i)) {
                i += 1;
            }
            let w = &piece[start..i];
            start = i;
            let (mut all, mut any) = (true, false);
            for &c in w.as_bytes() {
                let a = alnum(c);
                all &= a;
                any |= a;
            }
            if !any {
                continue;
            }
            f(Token {
                text: self.stem(w),
                word: Some(w),
            });
            // A word joined by punctuation (`React.memo`, `foo_bar`, `3.14`)
            // also yields its letter-and-digit runs.
            if !all {
                for sub in w.split(|c: char| !c.is_ascii_alphanumeric()) {
                    if !sub.is_empty() {
                        f(Token {
                            text: self.stem(sub),
                            word: Some(sub),
                        });
                    }
                }
            }
        }
    }

    /// The tokens of a whole text (split on white space, each piece folded).
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut folded = String::new();
        for piece in super::split_ws(text) {
            folded.clear();
            fold_into(piece, &mut folded);
            self.for_each_token(&folded, |t| out.push(t.text.into_owned()));
        }
        out
    }

    /// A folded word stemmed (and folded again), when there is a stemmer.
    fn stem<'a>(&self, word: &'a str) -> Cow<'a, str> {
        let Some(stemmer) = &self.stemmer else {
            return Cow::Borrowed(word);
        };
        let lower: String = word.chars().map(lower_char).collect();
        let stemmed = stemmer.stem(&lower);
        let mut out = String::with_capacity(stemmed.len());
        fold_into(&stemmed, &mut out);
        if out == word {
            Cow::Borrowed(word)
        } else {
            Cow::Owned(out)
        }
    }
}

/// An ASCII character's UAX #29 word-break class, as far as the rules that
/// can apply inside a piece (no white space) distinguish them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wb {
    Letter,
    Numeric,
    /// `:` (MidLetter).
    MidLetter,
    /// `.` (MidNumLet) and `'` (Single_Quote): the rules treat them alike.
    MidNumLetQ,
    /// `,` and `;` (MidNum).
    MidNum,
    /// `_` (ExtendNumLet).
    ExtendNumLet,
    Other,
}

const fn class_of(b: u8) -> Wb {
    match b {
        b'A'..=b'Z' | b'a'..=b'z' => Wb::Letter,
        b'0'..=b'9' => Wb::Numeric,
        b':' => Wb::MidLetter,
        b'.' | b'\'' => Wb::MidNumLetQ,
        b',' | b';' => Wb::MidNum,
        b'_' => Wb::ExtendNumLet,
        _ => Wb::Other,
    }
}

/// [`class_of`] of every byte, looked up rather than matched: the
/// segmentation asks for up to four classes per byte.
const CLASSES: [Wb; 256] = {
    let mut t = [Wb::Other; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = class_of(b as u8);
        b += 1;
    }
    t
};

fn wb(b: u8) -> Wb {
    CLASSES[b as usize]
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Whether there is no word boundary between `b[i - 1]` and `b[i]` of an
/// ASCII text without white space (UAX #29 rules WB5–WB13b).
fn joined(b: &[u8], i: usize) -> bool {
    let class = |i: usize| b.get(i).map(|&c| wb(c));
    let (prev, cur) = (wb(b[i - 1]), wb(b[i]));
    use Wb::*;
    match (prev, cur) {
        (Letter, Letter) | (Numeric, Numeric) | (Letter, Numeric) | (Numeric, Letter) => true,
        (Letter, MidLetter | MidNumLetQ) => class(i + 1) == Some(Letter),
        (MidLetter | MidNumLetQ, Letter) => i >= 2 && class(i - 2) == Some(Letter),
        (Numeric, MidNum | MidNumLetQ) => class(i + 1) == Some(Numeric),
        (MidNum | MidNumLetQ, Numeric) => i >= 2 && class(i - 2) == Some(Numeric),
        (Letter | Numeric | ExtendNumLet, ExtendNumLet) => true,
        (ExtendNumLet, Letter | Numeric) => true,
        _ => false,
    }
}

/// One token of a piece.
pub struct Token<'a> {
    /// The token as indexed and looked up.
    pub text: Cow<'a, str>,
    /// The word it was made from (before stemming); `None` for a bigram.
    pub word: Option<&'a str>,
}

/// A character's simple lowercase, when Unicode's lowercase is one
/// character (the inverse of the fold, for the stemmers, which expect lower
/// case).
fn lower_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let mut low = c.to_lowercase();
    match (low.next(), low.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// Han, Hiragana, Katakana or Hangul: scripts written without spaces, whose
/// runs also yield bigrams.
pub fn is_cjk(c: char) -> bool {
    !c.is_ascii()
        && matches!(
            c.script(),
            Script::Han | Script::Hiragana | Script::Katakana | Script::Hangul
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(language: Option<Language>, text: &str) -> Vec<String> {
        Analyzer::new(language).tokens(text)
    }

    #[test]
    fn words_are_uax29_words_with_a_letter_or_digit_folded() {
        assert_eq!(
            tokens(None, "Don't (stop) e.g. 3.14, foo_bar -- x/y"),
            [
                "DON'T", "DON", "T", "STOP", "E.G", "E", "G", "3.14", "3", "14", "FOO_BAR", "FOO",
                "BAR", "X", "Y"
            ]
        );
        // A code name joined by punctuation is found by its parts too.
        assert_eq!(tokens(None, "React.memo"), ["REACT.MEMO", "REACT", "MEMO"]);
        // Pieces are split on the spec's white space first.
        assert_eq!(tokens(None, "a\u{a0}b\u{3000}c"), ["A", "B", "C"]);
    }

    /// The ASCII shortcuts give what segmentation gives, on random strings
    /// of every ASCII class the rules tell apart.
    #[test]
    fn the_ascii_shortcut_agrees_with_segmentation() {
        let alphabet = [
            'A', 'z', 'q', '0', '9', '.', '_', '\'', ':', ',', ';', '-', '"', '(', '/', '`', '#',
        ];
        let plain = Analyzer::new(None);
        let mut rng = crate::testing::Rng(5);
        for _ in 0..200_000 {
            let s: String = (0..1 + rng.below(12))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let mut got = Vec::new();
            plain.for_each_token(&s, |t| got.push(t.text.into_owned()));
            let mut want: Vec<String> = Vec::new();
            for w in s.unicode_words() {
                want.push(w.to_string());
                if w.chars().any(|c| !c.is_alphanumeric()) {
                    want.extend(
                        w.split(|c: char| !c.is_alphanumeric())
                            .filter(|x| !x.is_empty())
                            .map(str::to_string),
                    );
                }
            }
            assert_eq!(got, want, "{s:?}");
        }
    }

    #[test]
    fn english_stems_and_folds_again() {
        assert_eq!(
            tokens(Some(Language::English), "Running runs RAN Retention"),
            ["RUN", "RUN", "RAN", "RETENT"]
        );
    }

    #[test]
    fn cjk_runs_also_yield_bigrams() {
        // UAX #29 makes each ideograph a word; the run adds its bigrams.
        assert_eq!(
            tokens(None, "東京都 x"),
            ["東", "京", "都", "東京", "京都", "X"]
        );
        // A Katakana run is one word, and its bigrams.
        assert_eq!(
            tokens(None, "カタカナ"),
            ["カタカナ", "カタ", "タカ", "カナ"]
        );
        // The run ends at any other character.
        assert_eq!(tokens(None, "日本a語"), ["日", "本", "A", "語", "日本"]);
    }

    #[test]
    fn every_language_has_a_name_a_stemmer_and_stop_words() {
        for l in Language::ALL {
            assert_eq!(Language::from_name(l.name()), Some(l));
            assert!(!l.stop_words().is_empty(), "{}", l.name());
            assert!(!Analyzer::new(Some(l)).tokens("word").is_empty());
        }
        assert_eq!(Language::from_name("klingon"), None);
        assert!(Language::English.stop_words().contains(&"the"));
    }
}
