//! Loads, reopens through the cache file and refreshes, end to end.

use std::fs;

use super::*;
use crate::concept::Concept;
use crate::fs::stamp::RACY_NS;
use crate::score::QueryTerms;

/// `n` concept files under `root`, every third in `sub/`, every seventh
/// with broken frontmatter, the others titled `t{i}`, tagged `k{i % 7}`
/// and holding `body(i, i % 7)`.
pub(super) fn write_sample(
    root: &std::path::Path,
    n: usize,
    body: impl Fn(usize, usize) -> String,
) {
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
pub(super) fn without_dac() -> rayon::ThreadPool {
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

/// docs/spec.md §1.3: the bundle's own `index.md` (its `okf_version` and the
/// stamp a refresh compares) is read under the root the walk opened, like its
/// concepts, not under whatever the root's path names by the end of the load.
#[cfg(unix)]
#[test]
fn index_md_is_read_under_the_root_the_walk_opened() {
    let d = crate::testing::scratch_dir("bundle", "index-retarget");
    for (release, version) in [("a", "0.1"), ("b", "0.2-rc")] {
        fs::create_dir_all(d.join(release)).unwrap();
        fs::write(d.join(release).join("x.md"), "---\ntype: T\n---\nbody\n").unwrap();
        let index = format!("---\nokf_version: \"{version}\"\n---\n");
        fs::write(d.join(release).join("index.md"), index).unwrap();
    }
    let current = d.join("current");
    std::os::unix::fs::symlink(d.join("a"), &current).unwrap();
    let walk = crate::testing::walk_then_retarget(&current, &d.join("b"));
    let progress = Progress::default();
    let reads = read_all(&walk.root, &walk.found, &|_| None, &progress).unwrap();
    let (found, diags) = (walk.found, walk.diagnostics);
    let b = super::assemble::assemble(&walk.root, found, reads, diags, Watch::none(), None);
    let b = b.unwrap();
    assert_eq!(b.okf_version.as_deref(), Some("0.1"));
    assert_eq!(
        b.index_stamp,
        crate::fs::stamp::stamp(&d.join("a/index.md"))
    );
}
