//! The cache file: written, read back, and rejected whole when damaged.

use std::fs::File;
use std::path::Path;

use super::read::CacheFile;
use super::write::{FileRecord, RecordOut, Sink, TextRef, TEXT_GROUP};
use super::*;
use crate::array::Array;
use crate::concept::{read_concept, Concept, FileOutcome};
use crate::fs::stamp::FileStamp;
use crate::index::bm25f::ListSizes;
use crate::index::Index;
use crate::text::analyze::{Analyzer, Language};

const LANG: Option<Language> = Some(Language::English);

fn sample() -> Vec<(String, FileStamp, FileOutcome)> {
    let src = [
            "---\ntype: T\ntitle: Å\ntags: [a, b]\nstale_after: 2030-01-01\nverified: {by: human:x, at: t}\nsupersedes: [z]\nauthority: canonical\n---\nbody\n",
            "---\ntitle: [broken\n---\n",
            "no frontmatter at all",
        ];
    src.iter()
        .enumerate()
        .map(|(i, s)| {
            let id = format!("c{i}");
            let r = read_concept(&id, &format!("{id}.md"), s.as_bytes());
            (id, (s.len() as u64, 1_000 + i as u64), r)
        })
        .collect()
}

fn concepts(files: &[(String, FileStamp, FileOutcome)]) -> Vec<Concept> {
    files.iter().filter_map(|f| f.2.concept.clone()).collect()
}

/// A cache file's path in a new scratch directory, and the directory's
/// guard (the directory goes when it is dropped).
fn scratch(name: &str) -> (crate::testing::Scratch, std::path::PathBuf) {
    let d = crate::testing::scratch_dir("cache", name);
    let path = d.join("c.okfc");
    (d, path)
}

/// Write the sample's cache to a new file at `path`; its bytes.
fn written(files: &[(String, FileStamp, FileOutcome)], path: &Path) -> Vec<u8> {
    written_with(files, path, 0)
}

/// [`written`], with `extra` ordinal ranks more than there are concepts.
fn written_with(files: &[(String, FileStamp, FileOutcome)], path: &Path, extra: u32) -> Vec<u8> {
    written_how(files, path, extra, false)
}

/// [`written_with`], the BM25F postings laid through the lists section's
/// mapping when `mapped` (as a load lays them), else written from memory.
fn written_how(
    files: &[(String, FileStamp, FileOutcome)],
    path: &Path,
    extra: u32,
    mapped: bool,
) -> Vec<u8> {
    let cs = concepts(files);
    let index = Index::build(&cs, &Analyzer::new(LANG));
    let ordinal: Vec<u32> = (0..cs.len() as u32 + extra).collect();
    written_as(files, path, &index, &ordinal, mapped)
}

/// The cache file of `files` with `index` and ordinal ranks `ordinal`
/// (what a load would write, or a forgery of it), at `path`; its bytes.
fn written_as(
    files: &[(String, FileStamp, FileOutcome)],
    path: &Path,
    index: &Index,
    ordinal: &[u32],
    mapped: bool,
) -> Vec<u8> {
    let cs = concepts(files);
    let _ = std::fs::remove_file(path);
    let mut sink = new_sink(path);
    let refs: Vec<TextRef> = sink.texts(cs.iter()).unwrap();
    if mapped {
        let b = &index.bm25f;
        let sizes = ListSizes {
            entries: b.body.len(),
            heads: b.head_words.len(),
        };
        let mut lists = sink.lists(sizes).unwrap().expect("a file can be mapped");
        let (near, body, heads) = lists.parts();
        near.copy_from_slice(&b.near);
        body.copy_from_slice(&b.body);
        heads.copy_from_slice(&b.head_words);
    } else {
        sink.lists_from(&index.bm25f).unwrap();
    }
    let mut refs = refs.into_iter();
    let outs: Vec<RecordOut<'_>> = files
        .iter()
        .map(|(id, st, r)| {
            RecordOut::Made(FileRecord {
                id,
                stamp: *st,
                concept: r.concept.as_ref().map(|c| (c, refs.next().unwrap())),
                diagnostics: &r.diagnostics,
            })
        })
        .collect();
    sink.records(&outs, &[], 42).unwrap();
    sink.finish(index, ordinal).unwrap();
    std::fs::read(path).unwrap()
}

/// A cache file started at `path`, which must not exist yet.
fn new_sink(path: &Path) -> Sink {
    let f = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .unwrap();
    Sink::new(f, "/root", Analyzer::new(LANG).name()).unwrap()
}

/// Why the saved index of the file at `path` is refused, if it is.
fn index_refused(path: &Path) -> Option<String> {
    open(path).unwrap().index(LANG).err().map(|r| r.to_string())
}

fn open(path: &Path) -> Result<CacheFile, Rejected> {
    match CacheFile::open(path, "/root", Analyzer::new(LANG).name()) {
        Ok(o) => Ok(o),
        Err(OpenError::Rejected(r)) => Err(r),
        Err(_) => panic!("not a rejection"),
    }
}

/// docs/spec.md §9.9: opening a file a load can use marks it used (its
/// access time), when its mark is an hour old or more; a recent mark is
/// left as it is, so an unchanged reopen does not write the inode each time.
/// Whether okfast set the times is seen in the status-change time, which
/// setting them moves and the kernel's own access-time updates do not.
#[cfg(unix)]
#[test]
fn opening_a_file_marks_it_used_at_most_hourly() {
    use std::fs::FileTimes;
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, SystemTime};

    let (_dir, path) = scratch("used");
    written(&sample(), &path);
    let meta = || std::fs::metadata(&path).unwrap();
    let changed = || (meta().ctime(), meta().ctime_nsec());
    let set = |t: SystemTime| {
        let f = File::options().write(true).open(&path).unwrap();
        f.set_times(FileTimes::new().set_accessed(t)).unwrap();
        std::thread::sleep(Duration::from_millis(20)); // a later change shows
        changed()
    };
    let now = SystemTime::now();
    let two_days = now - Duration::from_secs(2 * 86_400);
    let before = set(two_days);
    open(&path).unwrap();
    assert!(meta().accessed().unwrap() >= now - Duration::from_secs(60));
    assert_ne!(changed(), before);
    let before = set(now - Duration::from_secs(1_800));
    open(&path).unwrap();
    assert_eq!(changed(), before);
    // A rejected file is not marked: no load used it.
    let before = set(two_days);
    assert!(CacheFile::open(&path, "/other", Analyzer::new(LANG).name()).is_err());
    assert_eq!(changed(), before);
}

/// More concepts than several `writev` groups hold, with empty bodies,
/// no frontmatter and multi-byte text among them: each text reads back
/// from where its reference says, whichever group wrote it.
#[test]
fn texts_written_in_groups_read_back() {
    let files: Vec<(String, FileStamp, FileOutcome)> = (0..TEXT_GROUP * 2 + 77)
        .map(|i| {
            let id = format!("c{i:04}");
            let body = "ß word ".repeat(i % 7);
            let src = match i % 3 {
                0 => format!("---\ntype: T\ntitle: t{i}\n---\n{body}"),
                1 => format!("plain text {i} {body}"),
                _ => "---\ntype: T\n---\n".to_string(),
            };
            let r = read_concept(&id, &format!("{id}.md"), src.as_bytes());
            (id, (src.len() as u64, i as u64), r)
        })
        .collect();
    let (_dir, path) = scratch("groups");
    written(&files, &path);
    let o = open(&path).unwrap();
    for (i, (_, _, r)) in files.iter().enumerate() {
        let (a, b) = (
            o.read(i).unwrap().concept.unwrap(),
            r.concept.clone().unwrap(),
        );
        assert!(a.source.is_stored());
        assert_eq!(a.body().unwrap(), b.body().unwrap(), "{i}");
        assert_eq!(a.frontmatter().unwrap(), b.frontmatter().unwrap(), "{i}");
    }
}

#[test]
fn round_trip_with_texts_read_back() {
    let files = sample();
    let (_dir, path) = scratch("round");
    written(&files, &path);
    let o = open(&path).unwrap();
    assert_eq!(o.written_ns, 42);
    assert_eq!(o.len(), files.len());
    for (i, (id, st, r)) in files.iter().enumerate() {
        assert_eq!(o.file(i).unwrap(), (id.as_str(), *st));
        let got = o.read(i).unwrap();
        assert_eq!(got.diagnostics, r.diagnostics);
        let (a, b) = (got.concept.as_ref(), r.concept.as_ref());
        assert_eq!(a.is_some(), b.is_some());
        if let (Some(a), Some(b)) = (a, b) {
            assert!(a.source.is_stored());
            assert_eq!(a.body().unwrap(), b.body().unwrap());
            assert_eq!(a.frontmatter().unwrap(), b.frontmatter().unwrap());
            assert_eq!(
                (&a.title, &a.tags, a.stale_after),
                (&b.title, &b.tags, b.stale_after)
            );
            assert_eq!(a.governance, b.governance);
        }
    }
}

#[test]
fn the_saved_index_is_a_view_and_is_checked() {
    let files = sample();
    let cs = concepts(&files);
    let (_dir, path) = scratch("index");
    written(&files, &path);
    let o = open(&path).unwrap();
    let (ix, ord) = o.index(LANG).unwrap();
    let built = Index::build(&cs, &Analyzer::new(LANG));
    for (a, b) in ix.fields.iter().zip(&built.fields) {
        assert!(matches!(a.postings, Array::Mapped { .. }));
        assert_eq!(*a.vocab, *b.vocab);
        assert_eq!(*a.word_starts, *b.word_starts);
        assert_eq!(*a.postings, *b.postings);
        assert_eq!(*a.dense_bits, *b.dense_bits);
        assert_eq!(*a.trigrams.words, *b.trigrams.words);
    }
    assert_eq!(ix.tags, built.tags);
    assert_eq!(*ord, (0..cs.len() as u32).collect::<Vec<_>>());
    // Ranks for another number of concepts than the index describes are
    // an inconsistency.
    drop(o);
    written_with(&files, &path, 64);
    assert!(open(&path).unwrap().index(LANG).is_err());
}

/// The lists section laid through its mapping is the file written from
/// memory, byte for byte, and reads back as the index built.
#[test]
fn postings_laid_in_place_are_the_postings_written() {
    let files = sample();
    let cs = concepts(&files);
    let (_dir, path) = scratch("lists");
    let from_memory = written_how(&files, &path, 0, false);
    let laid = written_how(&files, &path, 0, true);
    assert_eq!(laid, from_memory);
    let o = open(&path).unwrap();
    let (ix, _) = o.index(LANG).unwrap();
    let built = Index::build(&cs, &Analyzer::new(LANG));
    let (a, b) = (&ix.bm25f, &built.bm25f);
    assert!(!b.body.is_empty());
    assert!(matches!(a.near, Array::Mapped { .. }));
    assert_eq!(
        (&*a.near, &*a.body, &*a.head_words),
        (&*b.near, &*b.body, &*b.head_words)
    );
    assert_eq!(*a.starts, *b.starts);
}

#[test]
fn every_truncation_and_every_flipped_byte_is_caught() {
    let files = sample();
    let (_dir, path) = scratch("flip");
    let bytes = written(&files, &path);
    let o = open(&path).unwrap();
    let texts = o.text_section();
    drop(o);
    for n in 0..bytes.len() {
        std::fs::write(&path, &bytes[..n]).unwrap();
        assert!(open(&path).is_err(), "prefix {n}");
    }
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x01;
        std::fs::write(&path, &b).unwrap();
        match open(&path) {
            // Only the text section is checked later, per concept.
            Ok(o) => {
                assert!(texts.contains(&i), "byte {i} passed the open checks");
                let bad = (0..o.len())
                    .filter_map(|k| o.read(k).unwrap().concept)
                    .filter(|c| c.source.read().is_err())
                    .count();
                assert_eq!(bad, 1, "byte {i}");
                // The damaged file was removed, so the next load rebuilds it.
                assert!(!path.exists());
            }
            Err(_) => assert!(!texts.contains(&i), "byte {i}"),
        }
    }
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        CacheFile::open(&path, "/other", Analyzer::new(LANG).name()),
        Err(OpenError::Rejected(Rejected::Foreign(_)))
    ));
    // A header's text is shown escaped in the reason (it reaches a warning).
    let at = bytes
        .windows(VERSION.len())
        .position(|w| w == VERSION.as_bytes())
        .expect("the version is in the header");
    let mut odd = bytes.clone();
    odd[at] = 0x08;
    std::fs::write(&path, &odd).unwrap();
    let why = open(&path)
        .err()
        .expect("a foreign version is rejected")
        .to_string();
    assert!(why.contains("\\u{8}") && !why.contains('\u{8}'), "{why}");
    let mut longer = bytes.clone();
    longer.push(0);
    std::fs::write(&path, &longer).unwrap();
    assert!(open(&path).is_err());
}

/// A dense bitset's bits past the last concept would be read as positions
/// of concepts that do not exist: a file holding one is not consistent.
#[test]
fn bits_past_the_last_concept_are_refused() {
    use super::read::no_bits_past;
    // 70 concepts: two words a set, bits 70.. of the second word unused.
    let clean = [u64::MAX, (1u64 << 6) - 1, 0, 1];
    assert!(no_bits_past(&clean, 2, 70));
    assert!(!no_bits_past(&[u64::MAX, 1u64 << 6], 2, 70));
    assert!(!no_bits_past(&[0, 0, 0, 1u64 << 63], 2, 70));
    // A whole last word, or no concepts: nothing past.
    assert!(no_bits_past(&[u64::MAX, u64::MAX], 2, 128));
    assert!(no_bits_past(&[], 0, 0));
}

#[test]
fn a_stale_after_past_python_datetime_is_not_an_instant() {
    use crate::concept::stale::is_instant;
    assert!(is_instant(0) && is_instant(253_402_300_799_999_999));
    assert!(!is_instant(253_402_300_800_000_000) && !is_instant(i64::MIN));
}

/// A saved field index whose word starts repeat (an empty slice for a
/// word, which has at least its `\n`) or do not start at 0 (a match before
/// the first word maps to no word) would make a search slice its
/// vocabulary out of range: the file is refused (and rebuilt), never used.
#[test]
fn word_starts_that_no_build_writes_are_refused() {
    use super::read::consistent;
    let cs = crate::testing::concepts_of(
        ["alpha beta", "gamma ta"].map(|t| format!("---\ntype: T\ntitle: {t}\n---\nbody\n")),
    );
    let n = cs.len();
    let mut ix = Index::build(&cs, &Analyzer::new(LANG));
    let f = &mut ix.fields[0];
    let starts: Vec<u32> = f.word_starts.to_vec();
    assert!(starts.len() >= 3, "{starts:?}");
    assert!(consistent(f, n));
    let mut repeated = starts.clone();
    repeated[1] = repeated[0];
    f.word_starts = Array::from(repeated);
    assert!(!consistent(f, n), "a repeated start");
    let mut late = starts.clone();
    late[0] = 1;
    f.word_starts = Array::from(late);
    assert!(
        !consistent(f, n),
        "a first word past the vocabulary's start"
    );
    f.word_starts = Array::from(starts);
    assert!(consistent(f, n));
}

/// `bytes`, a cache file changed in place, with its checksums made right
/// again: a forgery that only the checks after the checksums can catch.
fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let mut at = MAGIC.len() + 4;
    for _ in 0..3 {
        at += 4 + u32_at(&bytes, at) as usize;
    }
    let (texts, lists, core) = (
        u64_at(&bytes, at) as usize,
        u64_at(&bytes, at + 8) as usize,
        u64_at(&bytes, at + 16) as usize,
    );
    let lists_at = (at + 36 + texts).next_multiple_of(4096);
    let core_at = (lists_at + lists).next_multiple_of(8);
    let lists_crc = crc32fast::hash(&bytes[lists_at..lists_at + lists]);
    let core_crc = crc32fast::hash(&bytes[core_at..core_at + core]);
    bytes[at + 24..at + 28].copy_from_slice(&lists_crc.to_le_bytes());
    bytes[at + 28..at + 32].copy_from_slice(&core_crc.to_le_bytes());
    let header = crc32fast::hash(&bytes[..at + 32]);
    bytes[at + 32..at + 36].copy_from_slice(&header.to_le_bytes());
    bytes
}

/// Ordinal ranks that are not each concept's rank once (a forged file
/// whose checksums pass) are refused with the rest of the saved index.
#[test]
fn ordinal_ranks_that_are_not_a_permutation_are_refused() {
    use super::read::is_permutation;
    assert!(is_permutation(&[]) && is_permutation(&[2, 0, 1]));
    assert!(!is_permutation(&[0, 0, 1]) && !is_permutation(&[0, 3, 1]));
    let many: Vec<u32> = (0..200).rev().collect();
    assert!(is_permutation(&many));
    let files = sample();
    let cs = concepts(&files);
    let index = Index::build(&cs, &Analyzer::new(LANG));
    let (_dir, path) = scratch("ranks");
    written_as(&files, &path, &index, &[1, 0], false);
    assert!(open(&path).unwrap().index(LANG).is_ok());
    for ranks in [[0, 0], [1, 1], [0, 2]] {
        written_as(&files, &path, &index, &ranks, false);
        assert_eq!(
            index_refused(&path).as_deref(),
            Some("is corrupt (saved index: ordinal ranks)"),
            "{ranks:?}"
        );
    }
}

/// The folded tags are stored sorted, each once: a file listing them out
/// of order or twice (the checksums made right) is refused.
#[test]
fn tags_out_of_order_or_repeated_are_refused() {
    let files = sample();
    let (_dir, path) = scratch("tags");
    let bytes = written(&files, &path);
    let o = open(&path).unwrap();
    let mut names: Vec<String> = o.index(LANG).unwrap().0.tags.into_keys().collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.iter().all(|t| t.len() == 1), "{names:?}");
    drop(o);
    // The tags section's entries: a 1-byte name, then zeros to 8.
    let entry = |name: u8| -> usize {
        let want = [1, 0, 0, 0, name, 0, 0, 0];
        (0..bytes.len() - 8)
            .rev()
            .find(|&i| i % 8 == 0 && bytes[i..i + 8] == want)
            .expect("the tag's entry")
    };
    let (x, y) = (names[0].as_bytes()[0], names[1].as_bytes()[0]);
    let (a, b) = (entry(x) + 4, entry(y) + 4);
    assert!(a < b);
    for (first, second) in [(y, x), (x, x)] {
        let mut forged = bytes.clone();
        forged[a] = first;
        forged[b] = second;
        std::fs::write(&path, resealed(forged)).unwrap();
        assert_eq!(
            index_refused(&path).as_deref(),
            Some("is corrupt (saved index: tags not sorted)")
        );
    }
}

/// A file whose records and texts are copied from another (copy.rs): the
/// first concept's texts left behind and written again after the copied
/// run, the second file's record (no concept) and the third's copied with
/// their bytes, the third's texts moved to the start. The new file reads
/// back each file as the old one did, and a record is found where its
/// bytes end, with where its texts are.
#[test]
fn records_and_texts_copied_into_a_new_file_read_back() {
    let files = sample();
    let (_dir, path) = scratch("copied");
    written(&files, &path);
    let o = open(&path).unwrap();
    let raw: Vec<_> = (0..3).map(|i| o.raw_record(i).unwrap()).collect();
    let cs = concepts(&files);
    let len = |c: &Concept| c.source.stored_len();
    assert_eq!(raw[0].text, Some((0, len(&cs[0]))));
    assert_eq!(raw[1].text, None);
    assert_eq!(raw[2].text, Some((len(&cs[0]), len(&cs[1]))));
    let path2 = path.with_extension("two");
    let mut sink = new_sink(&path2);
    sink.copy_texts(&o, &[raw[2].text.unwrap()]).unwrap();
    let refs = sink.texts([&cs[0]]).unwrap();
    assert_eq!(refs[0].at, len(&cs[1]));
    let index = Index::build(&cs, &Analyzer::new(LANG));
    sink.lists_from(&index.bm25f).unwrap();
    let (id, st, r) = &files[0];
    let outs = [
        RecordOut::Made(FileRecord {
            id,
            stamp: *st,
            concept: Some((&cs[0], refs[0])),
            diagnostics: &r.diagnostics,
        }),
        RecordOut::Copied {
            bytes: raw[1].bytes,
            text_at: None,
        },
        RecordOut::Copied {
            bytes: raw[2].bytes,
            text_at: Some(0),
        },
    ];
    sink.records(&outs, &[], 43).unwrap();
    sink.finish(&index, &[0, 1]).unwrap();
    let two = open(&path2).unwrap();
    assert_eq!(two.written_ns, 43);
    assert_eq!(two.raw_record(2).unwrap().text, Some((0, len(&cs[1]))));
    for (i, (id, st, r)) in files.iter().enumerate() {
        assert_eq!(two.file(i).unwrap(), (id.as_str(), *st));
        let got = two.read(i).unwrap();
        assert_eq!(got.diagnostics, r.diagnostics);
        assert_eq!(got.concept.is_some(), r.concept.is_some());
        if let (Some(a), Some(b)) = (got.concept, r.concept.as_ref()) {
            assert_eq!(a.body().unwrap(), b.body().unwrap(), "{i}");
            assert_eq!(a.frontmatter().unwrap(), b.frontmatter().unwrap(), "{i}");
            assert_eq!((&a.title, &a.tags), (&b.title, &b.tags));
        }
    }
    // Texts past the old file's texts are not copied.
    let past = o.raw_record(2).unwrap().text.unwrap().0 + 1;
    assert!(sink_copy_refused(&o, &path, (past, len(&cs[1]))));
}

/// Whether copying texts `run` of `o` into a new file is refused.
fn sink_copy_refused(o: &CacheFile, path: &Path, run: (u64, u64)) -> bool {
    let mut sink = new_sink(&path.with_extension("three"));
    sink.copy_texts(o, &[run]).is_err()
}
