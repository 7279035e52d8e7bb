//! Loads, reopens through the cache file and refreshes, end to end.

use std::fs;

use super::*;
use crate::concept::Concept;
use crate::fs::stamp::RACY_NS;
use crate::score::QueryTerms;

/// `n` concept files under `root`, every third in `sub/`, every seventh
/// with broken frontmatter, the others titled `t{i}`, tagged `k{i % 7}`
/// and holding `body(i, i % 7)`.
fn write_sample(root: &std::path::Path, n: usize, body: impl Fn(usize, usize) -> String) {
    fs::create_dir_all(root.join("sub")).unwrap();
    for i in 0..n {
        let dir = if i % 3 == 0 { "sub/" } else { "" };
        let text = match i % 7 {
            6 => "---\ntitle: [broken\n---\n".to_string(),
            k => format!(
                "---\ntype: T\ntitle: t{i}\ntags: [k{k}]\n---\n{}\n",
                body(i, k)
            ),
        };
        fs::write(root.join(format!("{dir}c{i:02}.md")), text).unwrap();
    }
}

/// A thread pool whose threads have dropped the capabilities that let root
/// read and write past a file's or directory's permissions, so tests run as
/// root meet the permissions they set.
#[cfg(target_os = "linux")]
fn without_dac() -> rayon::ThreadPool {
    use rustix::thread::{capabilities, set_capabilities, CapabilitySet};
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .start_handler(|_| {
            let mut caps = capabilities(None).unwrap();
            caps.effective
                .remove(CapabilitySet::DAC_OVERRIDE | CapabilitySet::DAC_READ_SEARCH);
            set_capabilities(None, caps).unwrap();
        })
        .build()
        .unwrap()
}

mod refresh {
    use super::*;

    /// Whether `a` is a view of a cache file: the one a load laid it into,
    /// as the load serves it once written (docs/spec.md §9.5).
    fn laid_in_file<T: bytemuck::Pod>(a: &crate::array::Array<T>) -> bool {
        matches!(a, crate::array::Array::Mapped { .. })
    }

    /// A snapshot's concept ids in position order.
    fn ids(b: &Bundle) -> Vec<String> {
        b.concepts.iter().map(|c| c.id().to_string()).collect()
    }

    #[test]
    fn a_load_in_many_waves_equals_a_plain_load() {
        let d = crate::testing::scratch_dir("refresh", "waves");
        let root = d.join("root");
        write_sample(&root, 23, |i, k| format!("body {i} word{k}\r\nline"));
        // Old enough that a reopen trusts every file.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for p in ["sub/c00", "c01", "sub/c03"]
            .iter()
            .map(|n| root.join(format!("{n}.md")))
        {
            fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let plain = Bundle::load(&root).unwrap();
        let file = d.join("c.okfc");
        let view = |b: &Bundle| {
            let texts: Vec<(String, Option<String>, String, usize)> = b
                .concepts
                .iter()
                .map(|c| {
                    let fm = c.frontmatter().unwrap().len();
                    (
                        c.id.clone(),
                        c.title.clone(),
                        c.body().unwrap().into_owned(),
                        fm,
                    )
                })
                .collect();
            let hits: Vec<(Vec<u32>, Vec<u32>)> = ["word1", "body", "T1", "line", "zzz"]
                .iter()
                .map(|q| {
                    let r = crate::score::search(b, &QueryTerms::new(q), None, None);
                    (r.positions, r.scores)
                })
                .collect();
            let tagged =
                crate::score::search(b, &QueryTerms::new("body"), Some("k2"), None).positions;
            (
                texts,
                hits,
                tagged,
                b.diagnostics.clone(),
                b.ordinal_rank.to_vec(),
            )
        };
        for wave in [1, 4, 5, 100] {
            let _ = fs::remove_file(&file);
            let (b, report) = Bundle::load_through(
                &root,
                &file,
                DEFAULT_LANGUAGE,
                &IdRange::default(),
                &Progress::default(),
                wave,
            )
            .unwrap();
            assert_eq!(report.status, CacheStatus::Miss);
            assert!(
                b.concepts.iter().all(|c| c.source.is_stored()),
                "wave {wave}"
            );
            assert_eq!(view(&b), view(&plain), "wave {wave}");
            for (a, p) in b.index.fields.iter().zip(&plain.index.fields) {
                assert_eq!(
                    (&*a.postings, &*a.dense_bits),
                    (&*p.postings, &*p.dense_bits)
                );
            }
            // The BM25F postings were laid in the cache file's lists section
            // (docs/cache-format.md), as a build in memory lays them.
            let (a, p) = (&b.index.bm25f, &plain.index.bm25f);
            assert!(laid_in_file(&a.near), "wave {wave}");
            assert_eq!(
                (&*a.near, &*a.body, &*a.head_words),
                (&*p.near, &*p.body, &*p.head_words)
            );
            // A reopen: the recent files are read again, the rest taken as cached.
            let (again, report) = Bundle::load_through(
                &root,
                &file,
                DEFAULT_LANGUAGE,
                &IdRange::default(),
                &Progress::default(),
                wave,
            )
            .unwrap();
            assert_eq!(
                (report.status, report.reread),
                (CacheStatus::Partial, 20),
                "wave {wave}"
            );
            assert_eq!(view(&again), view(&plain), "wave {wave}");
        }
        let _ = fs::remove_dir_all(&d);
    }

    /// Through the cache file: directories older than the racy margin are
    /// not listed again on a reopen, and one that gains a file is, with the
    /// result of a fresh load. Directory times cannot be set back (the
    /// status-change time), so this waits out the margin once.
    #[test]
    fn a_reopen_lists_only_the_directories_that_changed() {
        let d = crate::testing::scratch_dir("refresh", "relist");
        let root = d.join("root");
        for f in ["a/x.md", "a/y.md", "b/z.md", "b/c/w.md", "top.md"] {
            fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            fs::write(
                root.join(f),
                format!("---\ntype: T\ntitle: {f}\n---\nbody\n"),
            )
            .unwrap();
        }
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for f in ["a/x.md", "a/y.md", "b/z.md", "b/c/w.md", "top.md"] {
            let h = fs::File::options().write(true).open(root.join(f)).unwrap();
            h.set_modified(old).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_nanos(
            RACY_NS as u64 + 100_000_000,
        ));
        let file = d.join("c.okfc");
        let (_, cold) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!((cold.status, cold.listed), (CacheStatus::Miss, 4));
        let (warm, r) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!((r.status, r.reread, r.listed), (CacheStatus::Hit, 0, 0));
        assert_eq!(warm.len(), 5);
        fs::write(root.join("b/c/new.md"), "---\ntype: T\ntitle: new\n---\n").unwrap();
        let (after, r) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!((r.status, r.reread, r.listed), (CacheStatus::Partial, 1, 1));
        let fresh = Bundle::load(&root).unwrap();
        assert_eq!(ids(&after), ids(&fresh));
        assert!(ids(&after).contains(&"b/c/new".to_string()));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_warm_reopen_decodes_a_concept_only_when_it_is_used() {
        let d = crate::testing::scratch_dir("refresh", "lazy");
        fs::create_dir_all(d.join("root/sub")).unwrap();
        let root = d.join("root");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for i in 0..12 {
            let dir = if i % 3 == 0 { "sub/" } else { "" };
            let text = match i % 4 {
                0 => "---\ntitle: [broken\n---\n".to_string(),
                1 => format!(
                    "---\ntype: T\ntitle: t{i}\nauthority: canonical\nstale_after: 2020-01-0{}\nsupersedes: [c0{}]\n---\nbody {i}\n",
                    1 + i % 9,
                    i + 1
                ),
                k => format!("---\ntype: T\ntitle: t{i}\ntags: [k{k}]\n---\nbody {i} w{k}\n"),
            };
            let p = root.join(format!("{dir}c{i:02}.md"));
            fs::write(&p, text).unwrap();
            fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let plain = Bundle::load(&root).unwrap();
        let file = d.join("c.okfc");
        let (_, report) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!(report.status, CacheStatus::Miss);
        let (warm, report) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!((report.status, report.reread), (CacheStatus::Hit, 0));
        assert_eq!(warm.len(), plain.len());
        // Ids, positions, columns and diagnostics without decoding anything.
        assert_eq!(ids(&warm), ids(&plain));
        assert_eq!(warm.position("sub/c09"), plain.position("sub/c09"));
        assert_eq!(warm.columns, plain.columns);
        assert_eq!(warm.columns.governed.len(), 3);
        assert_eq!(warm.diagnostics, plain.diagnostics);
        assert!(warm.concepts.iter().all(|c| !c.is_decoded()));
        // A search decodes nothing; a refresh that keeps the index carries
        // the slots over as they are.
        let hits = crate::score::search(&warm, &QueryTerms::new("body"), None, None);
        assert_eq!(hits.positions.len(), plain.len());
        let touched = root.join("c02.md");
        fs::File::options()
            .write(true)
            .open(&touched)
            .unwrap()
            .set_modified(std::time::SystemTime::now())
            .unwrap();
        let next = warm.refresh().unwrap().expect("a touched file is a change");
        assert_eq!(next.made_by, MadeBy::EventsIndexKept);
        let decoded: Vec<&str> = next
            .concepts
            .iter()
            .filter(|c| c.is_decoded())
            .map(|c| c.id())
            .collect();
        assert_eq!(decoded, ["c02"], "only the file read again is in memory");
        assert_eq!(next.columns, Bundle::load(&root).unwrap().columns);
        // Decoded, each concept is the one a fresh load reads.
        for (a, b) in warm.concepts.iter().zip(&plain.concepts) {
            let (a, b): (&Concept, &Concept) = (a, b);
            assert_eq!(
                (&a.id, &a.title, &a.tags, a.stale_after, &a.authority),
                (&b.id, &b.title, &b.tags, b.stale_after, &b.authority)
            );
            assert_eq!(a.governance, b.governance);
            assert_eq!(a.body().unwrap(), b.body().unwrap());
            assert!(a.source.is_stored());
        }
        assert!(warm.concepts.iter().all(ConceptCell::is_decoded));
        let _ = fs::remove_dir_all(&d);
    }

    /// The space allocated ahead of a cache file's texts and index
    /// ([`cache::Sink::preallocate`]) is exactly what they fill: the file
    /// holds no blocks past its end, and it is read back.
    /// Lists laid in the cache file whose pages the load let go of as it
    /// laid them (docs/cache-format.md) read back whole: many pages per
    /// token range, so whole pages are let go of, and every array as a
    /// plain load builds it.
    #[test]
    fn postings_laid_in_the_file_and_let_go_of_read_back_whole() {
        let d = crate::testing::scratch_dir("bundle", "laid");
        for i in 0..3000 {
            let body: String = (0..100)
                .map(|k| format!("w{} ", (i * 7 + k * 13) % 997))
                .collect();
            let text = format!("---\ntype: T\ntitle: t{i} x{}\n---\n{body}", i % 50);
            fs::write(d.join(format!("c{i:04}.md")), text).unwrap();
        }
        let plain = Bundle::load(&d).unwrap();
        let cache_dir = crate::testing::scratch_dir("bundle", "laid-cache");
        let (b, r) = Bundle::load_cached(&d, &cache_dir.join("c.okfc")).unwrap();
        assert_eq!(r.status, CacheStatus::Miss);
        let (a, p) = (&b.index.bm25f, &plain.index.bm25f);
        assert!(laid_in_file(&a.near));
        // Each of the 64 token ranges spans two pages or more of offsets.
        assert!(2 * a.near.len() > 64 * 2 * 4096, "{}", a.near.len());
        assert!(*a.near == *p.near && *a.body == *p.body && *a.head_words == *p.head_words);
        let _ = fs::remove_dir_all(&d);
        let _ = fs::remove_dir_all(&cache_dir);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_cache_file_has_no_space_allocated_past_its_end() {
        use std::os::unix::fs::MetadataExt;
        let d = crate::testing::scratch_dir("bundle", "prealloc");
        // Bodies of several pages each: space allocated for the wrong length
        // shows in whole blocks.
        for i in 0..40 {
            let body = format!("word{i} ").repeat(1500 + 37 * i);
            let text = format!("---\ntype: T\ntitle: t{i}\n---\n{body}");
            fs::write(d.join(format!("c{i}.md")), text).unwrap();
        }
        let cache_dir = crate::testing::scratch_dir("bundle", "prealloc-cache");
        let file = cache_dir.join("c.okfc");
        let (_, r) = Bundle::load_cached(&d, &file).unwrap();
        assert_eq!(r.status, CacheStatus::Miss);
        let m = fs::metadata(&file).unwrap();
        let (allocated, size) = (m.blocks() * 512, m.len());
        assert!(size > 400_000, "{size}");
        assert!(
            allocated <= size.next_multiple_of(64 * 1024),
            "{allocated} bytes allocated for a file of {size}"
        );
        // Read back, not rejected (the files are too new to be trusted, so
        // they are read again: "partial").
        let (warm, r) = Bundle::load_cached(&d, &file).unwrap();
        assert!(
            matches!(r.status, CacheStatus::Hit | CacheStatus::Partial),
            "{:?}",
            r.status
        );
        assert_eq!(warm.concepts.len(), 40);
        let _ = fs::remove_dir_all(&d);
        let _ = fs::remove_dir_all(&cache_dir);
    }

    /// A file that cannot be read (its permissions deny it: the test's
    /// threads drop the capabilities that let root read it anyway) is opened
    /// again by a refresh that compares the files, and while it fails the
    /// same way, nothing changed (docs/spec.md §1.9); once readable, it is
    /// read.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_unreadable_file_that_stays_so_changes_nothing() {
        use std::os::unix::fs::PermissionsExt;
        let d = crate::testing::scratch_dir("refresh", "unreadable-same");
        fs::write(d.join("a.md"), "---\ntype: T\ntitle: alpha\n---\none").unwrap();
        fs::write(d.join("x.md"), "---\ntype: T\ntitle: ex\n---\ntwo").unwrap();
        fs::set_permissions(d.join("x.md"), fs::Permissions::from_mode(0o000)).unwrap();
        without_dac().install(|| {
            assert!(
                fs::read(d.join("x.md")).is_err(),
                "the file must be unreadable"
            );
            let b = Bundle::load(&d).unwrap();
            assert_eq!(b.concepts.len(), 1);
            assert_eq!(
                b.diagnostics[0].code,
                crate::diagnostic::Code::UnreadableFile
            );
            let past = std::time::Instant::now() - std::time::Duration::from_secs(60);
            for _ in 0..2 {
                // Past the time an empty change queue is trusted: the files
                // are compared, the unreadable one opened again.
                *b.last_full_check.lock().unwrap() = past;
                assert!(b.refresh().unwrap().is_none());
            }
            fs::set_permissions(d.join("x.md"), fs::Permissions::from_mode(0o644)).unwrap();
            *b.last_full_check.lock().unwrap() = past;
            let fresh = b.refresh().unwrap().expect("made readable");
            assert_eq!(fresh.concepts.len(), 2);
        });
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn refresh_rereads_only_what_changed() {
        let d = crate::testing::scratch_dir("refresh", "refresh");
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("a.md"), "---\ntype: T\ntitle: alpha\n---\none").unwrap();
        fs::write(d.join("sub/b.md"), "---\ntype: T\ntitle: beta\n---\ntwo").unwrap();
        fs::write(d.join("bad.md"), "---\ntype: T\n").unwrap();
        let b = Bundle::load(&d).unwrap();
        assert!(b.refresh().unwrap().is_none());
        // Change one file (a different size, so the stamp differs whatever the
        // clock's granularity), add one, remove one.
        fs::write(
            d.join("a.md"),
            "---\ntype: T\ntitle: alpha two\n---\none more",
        )
        .unwrap();
        fs::write(d.join("c.md"), "---\ntype: T\ntitle: gamma\n---\nthree").unwrap();
        fs::remove_file(d.join("sub/b.md")).unwrap();
        let fresh = b.refresh().unwrap().expect("changed");
        let again = Bundle::load(&d).unwrap();
        let ids = |x: &Bundle| {
            x.concepts
                .iter()
                .map(|c| {
                    (
                        c.id.clone(),
                        c.title.clone(),
                        c.body().unwrap().into_owned(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&fresh), ids(&again));
        assert_eq!(fresh.diagnostics, again.diagnostics);
        assert_eq!(fresh.concepts[0].title.as_deref(), Some("alpha two"));
        assert_eq!(b.concepts.len(), 2, "the old snapshot is untouched");
        assert!(fresh.refresh().unwrap().is_none());
        let _ = fs::remove_dir_all(&d);
    }
}

mod watch {
    use super::*;

    fn scratch(name: &str) -> crate::testing::Scratch {
        let d = crate::testing::scratch_dir("watch", name);
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("sub/a.md"), "---\ntype: T\ntitle: alpha\n---\none").unwrap();
        d
    }

    #[test]
    fn same_size_rewrite_is_seen() {
        let d = scratch("rewrite");
        let b = Bundle::load(&d).unwrap();
        assert!(b.refresh().unwrap().is_none());
        // Same length, different content: only the watch or the mtime tells.
        fs::write(d.join("sub/a.md"), "---\ntype: T\ntitle: ALPHA\n---\none").unwrap();
        let fresh = b.refresh().unwrap().expect("changed");
        assert_eq!(fresh.concepts[0].title.as_deref(), Some("ALPHA"));
        assert!(fresh.refresh().unwrap().is_none());
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn files_in_a_new_directory_are_seen() {
        let d = scratch("newdir");
        let b = Bundle::load(&d).unwrap();
        fs::create_dir(d.join("later")).unwrap();
        // An empty new directory changes no concept, but the next snapshot
        // must watch it.
        let b2 = b
            .refresh()
            .unwrap()
            .expect("a new directory needs a new snapshot");
        assert_eq!(b2.len(), 1);
        fs::write(d.join("later/n.md"), "---\ntype: T\n---\nnew").unwrap();
        let b3 = b2
            .refresh()
            .unwrap()
            .expect("the file in the new directory is seen");
        assert_eq!(b3.len(), 2);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn every_refresh_of_a_snapshot_sees_every_change_since_it() {
        // Two refreshes of one snapshot (two threads, say): the second sees
        // the change the first drained from the queue, and its own.
        let d = scratch("twice");
        let b = Bundle::load(&d).unwrap();
        fs::write(d.join("sub/a.md"), "---\ntype: T\ntitle: ALPHA\n---\none").unwrap();
        let first = b.refresh().unwrap().expect("changed");
        assert_eq!(first.concepts[0].title.as_deref(), Some("ALPHA"));
        fs::write(d.join("sub/b.md"), "---\ntype: T\ntitle: beta\n---\ntwo").unwrap();
        let second = b.refresh().unwrap().expect("changed");
        let titles: Vec<_> = second.concepts.iter().map(|c| c.title.as_deref()).collect();
        assert_eq!(titles, [Some("ALPHA"), Some("beta")]);
        assert!(b.refresh().unwrap().is_some(), "still changed since b");
        let _ = fs::remove_dir_all(&d);
    }

    /// A link named like a reserved file (`log.md` anywhere, `index.md`
    /// below the root) is reported by a walk whatever its name (docs/spec.md
    /// §1.1), so a refresh after one appears reports it too (§1.9).
    #[cfg(unix)]
    #[test]
    fn a_link_named_like_a_reserved_file_is_reported() {
        for (k, name) in ["log.md", "sub/log.md", "sub/index.md"].iter().enumerate() {
            let d = scratch(&format!("reserved-link-{k}"));
            let b = Bundle::load(&d).unwrap();
            std::os::unix::fs::symlink(d.join("sub/a.md"), d.join(name)).unwrap();
            let fresh = Bundle::load(&d).unwrap();
            assert_eq!(fresh.diagnostics.len(), 1, "{name}");
            let r = b.refresh().unwrap().expect("a link appeared");
            assert_eq!(r.diagnostics, fresh.diagnostics, "{name}");
            let _ = fs::remove_dir_all(&d);
        }
    }

    #[test]
    fn irrelevant_changes_keep_the_snapshot() {
        let d = scratch("hidden");
        let b = Bundle::load(&d).unwrap();
        fs::write(d.join("sub/.hidden.md"), "x").unwrap();
        fs::write(d.join("notes.txt"), "x").unwrap();
        assert!(b.refresh().unwrap().is_none());
        assert!(b.refresh().unwrap().is_none());
        let _ = fs::remove_dir_all(&d);
    }
}

mod spliced {
    use super::*;
    use crate::bm25f::{explain, QueryTokens, Stats};
    use crate::text::analyze::Analyzer;

    /// What a snapshot answers: its concepts, diagnostics, columns and
    /// ordinal ranks, and both scorers' rankings (score bits) and
    /// explanations.
    #[allow(clippy::type_complexity)]
    pub(super) fn answers(b: &Bundle) -> Vec<String> {
        let mut out: Vec<String> = b
            .concepts
            .iter()
            .map(|c| format!("{:?} {:?} {:?} {:?}", c.id, c.title, c.tags, c.body()))
            .collect();
        out.push(format!("{:?}", b.diagnostics));
        out.push(format!("{:?} {:?}", b.columns, b.ordinal_rank.to_vec()));
        let analyzer = Analyzer::new(b.index.bm25f.language);
        let params = crate::bm25f::Params {
            k1: 1.2,
            weights: [3.0, 2.0, 1.5, 1.0],
            b: [0.5, 0.3, 0.6, 0.75],
        };
        for q in ["body", "edited", "w3 body", "added", "gone", "t7", "zzz"] {
            for tag in [None, Some("k2")] {
                let r = crate::score::search(b, &QueryTerms::new(q), tag, Some(5));
                out.push(format!("{q} {tag:?} {:?} {:?}", r.positions, r.scores));
            }
            let tokens = QueryTokens::new(&analyzer, q, false);
            let stats = Stats::of(&b.index.bm25f, &tokens.tokens);
            for limit in [Some(3), None] {
                let r = crate::bm25f::search(b, &tokens, &stats, &params, None, limit);
                let bits: Vec<u64> = r.scores.iter().map(|s| s.to_bits()).collect();
                out.push(format!("{q} {stats:?} {:?} {bits:?}", r.positions));
            }
            for p in 0..b.len() as u32 {
                let e = explain(&b.index.bm25f, &tokens, &stats, &params, p);
                out.push(format!("{q} {p} {e:?}"));
            }
        }
        out
    }

    /// A reopen after two files' bodies changed, one was added and one
    /// removed splices the saved index and answers as a fresh load does.
    /// The files were changed just now, within the racy window a new cache
    /// file could not trust them in (docs/spec.md §9.4), so it leaves the
    /// cache file as it was (§9.5) and the next reopen splices again.
    #[test]
    fn a_reopen_after_a_few_edits_splices_the_saved_index() {
        let d = crate::testing::scratch_dir("bundle", "spliced");
        fs::create_dir_all(d.join("root/sub")).unwrap();
        let root = d.join("root");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let write_old = |name: &str, text: &str| {
            let p = root.join(name);
            fs::write(&p, text).unwrap();
            let f = fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(old).unwrap();
        };
        for i in 0..40 {
            let dir = if i % 3 == 0 { "sub/" } else { "" };
            let text = match i % 9 {
                8 => "---\ntitle: [broken\n---\n".to_string(),
                k => {
                    format!("---\ntype: T\ntitle: t{i}\ntags: [k{k}]\n---\nbody {i} w{k} gone{i}\n")
                }
            };
            write_old(&format!("{dir}c{i:02}.md"), &text);
        }
        let file = d.join("c.okfc");
        let (_, report) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!(report.status, CacheStatus::Miss);
        let written = fs::read(&file).unwrap();
        // Two bodies edited, one file added, one removed.
        let edit = |name: &str, text: &str| fs::write(root.join(name), text).unwrap();
        edit(
            "c04.md",
            "---\ntype: T\ntitle: t4\ntags: [k4]\n---\nedited body w3\n",
        );
        edit("sub/c09.md", "---\ntype: T\ntitle: t9\n---\nedited\n");
        edit(
            "c05b.md",
            "---\ntype: T\ntitle: added\ntags: [k2]\n---\nadded body\n",
        );
        fs::remove_file(root.join("c07.md")).unwrap();
        let plain = Bundle::load(&root).unwrap();
        for _ in 0..2 {
            let (b, report) = Bundle::load_cached(&root, &file).unwrap();
            assert_eq!(b.made_by, MadeBy::LoadIndexSpliced);
            assert_eq!(b.made_by.as_str(), "load, index spliced");
            assert_eq!((report.status, report.reread), (CacheStatus::Partial, 3));
            assert_eq!(answers(&b), answers(&plain));
            // The others' texts stay in the cache file, which is left as it was.
            let in_memory: Vec<&str> = b
                .concepts
                .iter()
                .filter(|c| !c.source.is_stored())
                .map(|c| c.id.as_str())
                .collect();
            assert_eq!(in_memory, ["c04", "c05b", "sub/c09"]);
            assert_eq!(fs::read(&file).unwrap(), written);
        }
        let _ = fs::remove_dir_all(&d);
    }

    /// Set the files `names` under `root` (every file when empty) as
    /// modified at `at`, out of any racy window.
    fn age(root: &std::path::Path, names: &[&str], at: std::time::SystemTime) {
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for e in fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                let name = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                if p.is_dir() {
                    dirs.push(p);
                } else if names.is_empty() || names.contains(&name.as_str()) {
                    let f = fs::File::options().write(true).open(&p).unwrap();
                    f.set_modified(at).unwrap();
                }
            }
        }
    }

    fn hours_ago(n: u64) -> std::time::SystemTime {
        std::time::SystemTime::now() - std::time::Duration::from_secs(3600 * n)
    }

    /// Edits made long enough ago to be trusted: the reopen splices the
    /// saved index, writes a new cache file for the result and serves the
    /// snapshot from it (docs/spec.md §9.5), and the next reopen uses that
    /// file as it is (a hit) and answers the same. Round after round, the
    /// file is the size a build of the same files writes: the texts of
    /// edited and removed concepts are not carried over.
    #[test]
    fn a_splice_writes_a_cache_file_the_next_reopen_uses() {
        let d = crate::testing::scratch_dir("bundle", "spliced-written");
        let root = d.join("root");
        write_sample(&root, 40, |i, k| format!("body {i} w{k} gone{i}"));
        age(&root, &[], hours_ago(2));
        let file = d.join("c.okfc");
        let (_, report) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!(report.status, CacheStatus::Miss);
        for round in 0..4u64 {
            let body = "edited body w3 ".repeat(round as usize + 1);
            fs::write(
                root.join("c04.md"),
                format!("---\ntype: T\ntitle: t4\ntags: [k4]\n---\n{body}\n"),
            )
            .unwrap();
            match round {
                0 => fs::write(
                    root.join("c05b.md"),
                    "---\ntype: T\ntitle: added\n---\nadded\n",
                ),
                1 => fs::remove_file(root.join("c08.md")),
                _ => fs::write(
                    root.join("sub/c09.md"),
                    format!("---\ntitle: t9\n---\n{body}"),
                ),
            }
            .unwrap();
            let at = hours_ago(1) + std::time::Duration::from_secs(round);
            let third = ["c05b.md", "c04.md", "sub/c09.md", "sub/c09.md"][round as usize];
            age(&root, &["c04.md", third], at);
            let plain = Bundle::load(&root).unwrap();
            let (b, report) = Bundle::load_cached(&root, &file).unwrap();
            assert_eq!(b.made_by, MadeBy::LoadIndexSpliced);
            let reread = [2, 1, 2, 2][round as usize];
            assert_eq!(
                (report.status, report.reread),
                (CacheStatus::Partial, reread)
            );
            assert_eq!(report.detail, "");
            // Served from the file written: nothing decoded, every text in it.
            assert!(b.concepts.iter().all(|c| !c.is_decoded()));
            assert_eq!(answers(&b), answers(&plain));
            assert!(b.concepts.iter().all(|c| c.source.is_stored()));
            let (again, report) = Bundle::load_cached(&root, &file).unwrap();
            assert_eq!((report.status, report.reread), (CacheStatus::Hit, 0));
            assert_eq!(answers(&again), answers(&plain));
            let built = d.join(format!("built{round}.okfc"));
            let (_, report) = Bundle::load_cached(&root, &built).unwrap();
            assert_eq!(report.status, CacheStatus::Miss);
            let len = |p: &std::path::Path| fs::metadata(p).unwrap().len();
            assert_eq!(len(&file), len(&built), "round {round}");
        }
        let _ = fs::remove_dir_all(&d);
    }

    /// A splice whose new cache file cannot be written (its directory
    /// denies it: the test's threads drop the capabilities that let root
    /// write anyway) answers all the same from the old file, leaves it, and
    /// says so in the report's detail.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_splice_that_cannot_write_keeps_the_old_file() {
        use std::os::unix::fs::PermissionsExt;
        let d = crate::testing::scratch_dir("bundle", "spliced-blocked");
        let root = d.join("root");
        write_sample(&root, 20, |i, k| format!("body {i} w{k}"));
        age(&root, &[], hours_ago(2));
        let cache = d.join("cache");
        fs::create_dir_all(&cache).unwrap();
        let file = cache.join("c.okfc");
        Bundle::load_cached(&root, &file).unwrap();
        let written = fs::read(&file).unwrap();
        fs::write(
            root.join("c04.md"),
            "---\ntype: T\ntitle: t4\n---\nedited w3\n",
        )
        .unwrap();
        age(&root, &["c04.md"], hours_ago(1));
        let plain = Bundle::load(&root).unwrap();
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o555)).unwrap();
        let (b, report) = without_dac().install(|| Bundle::load_cached(&root, &file).unwrap());
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(b.made_by, MadeBy::LoadIndexSpliced);
        assert!(
            report.detail.starts_with("(not written: "),
            "{}",
            report.detail
        );
        assert_eq!(answers(&b), answers(&plain));
        assert_eq!(fs::read(&file).unwrap(), written);
        let _ = fs::remove_dir_all(&d);
    }

    /// A file that cannot be read has no stamp, so no record (docs/spec.md
    /// §9.4): every reopen reads it again and splices. A new cache file
    /// would change nothing the next load uses, so none is written (§9.5):
    /// the file is not rewritten whole on every load.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_splice_of_only_an_unreadable_file_writes_nothing() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let d = crate::testing::scratch_dir("bundle", "spliced-unreadable");
        let root = d.join("root");
        write_sample(&root, 20, |i, k| format!("body {i} w{k}"));
        fs::write(root.join("x.md"), "---\ntype: T\ntitle: ex\n---\nsecret\n").unwrap();
        age(&root, &[], hours_ago(2));
        fs::set_permissions(root.join("x.md"), fs::Permissions::from_mode(0o000)).unwrap();
        let file = d.join("c.okfc");
        without_dac().install(|| {
            assert!(fs::read(root.join("x.md")).is_err(), "must be unreadable");
            let (_, report) = Bundle::load_cached(&root, &file).unwrap();
            assert_eq!(report.status, CacheStatus::Miss);
            let ino = fs::metadata(&file).unwrap().ino();
            for _ in 0..2 {
                let (b, report) = Bundle::load_cached(&root, &file).unwrap();
                assert_eq!(b.made_by, MadeBy::LoadIndexSpliced);
                assert_eq!((report.status, report.reread), (CacheStatus::Partial, 1));
                assert_eq!(report.detail, "");
                assert_eq!(fs::metadata(&file).unwrap().ino(), ino, "rewritten");
            }
        });
        fs::set_permissions(root.join("x.md"), fs::Permissions::from_mode(0o644)).unwrap();
        let _ = fs::remove_dir_all(&d);
    }
}

mod served {
    use super::*;
    use crate::array::{Array, Map};

    /// A cold load through a cache file answers from the file it has just
    /// written, as a reopen does: no concept is in memory until used and the
    /// index is a view of the file, so what the build held is freed
    /// (docs/spec.md §9.5). A load whose cache file cannot be written keeps
    /// what it built.
    #[test]
    fn a_cold_load_serves_from_the_cache_file_it_wrote() {
        let d = crate::testing::scratch_dir("bundle", "served");
        let root = d.join("root");
        write_sample(&root, 30, |i, k| format!("body {i} w{k} gone{i}"));
        let plain = Bundle::load(&root).unwrap();
        let file = d.join("c.okfc");
        let (cold, report) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!(report.status, CacheStatus::Miss);
        assert_eq!(cold.len(), plain.len());
        assert!(cold.concepts.iter().all(|c| !c.is_decoded()));
        let read_view =
            |a: &Array<u8>| matches!(a, Array::Mapped { map, .. } if matches!(**map, Map::Read(_)));
        assert!(cold.index.fields.iter().all(|f| read_view(&f.vocab)));
        assert_eq!(
            super::spliced::answers(&cold),
            super::spliced::answers(&plain)
        );
        assert!(cold.concepts.iter().all(|c| c.source.is_stored()));
        // Where the cache file cannot be written, the load is as built.
        let blocked = d.join("not-a-dir");
        fs::write(&blocked, "x").unwrap();
        let (kept, report) = Bundle::load_cached(&root, &blocked.join("c.okfc")).unwrap();
        assert!(report.detail.contains("not written"), "{}", report.detail);
        assert!(kept.concepts.iter().all(|c| c.is_decoded()));
        assert_eq!(
            super::spliced::answers(&kept),
            super::spliced::answers(&plain)
        );
        let _ = fs::remove_dir_all(&d);
    }
}
