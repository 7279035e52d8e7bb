//! A load through the cache file that splices the saved index, and the cache
//! file a load writes and then serves its snapshot from (docs/spec.md §9.4,
//! §9.5): `spliced.rs` and `writing.rs`, end to end.

use std::fs;

#[cfg(target_os = "linux")]
use super::tests::without_dac;
use super::tests::write_sample;
use super::*;
use crate::score::QueryTerms;

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

    /// [`write_sample`]'s files in a new scratch directory's `root`, every
    /// one dated two hours back: the directory and the root.
    fn aged_sample(name: &str, n: usize) -> (crate::testing::Scratch, std::path::PathBuf) {
        let d = crate::testing::scratch_dir("bundle", name);
        let root = d.join("root");
        write_sample(&root, n, |i, k| format!("body {i} w{k} gone{i}"));
        age(&root, &[], hours_ago(2));
        (d, root)
    }

    /// Edits made long enough ago to be trusted: the reopen splices the
    /// saved index, writes a new cache file for the result and serves the
    /// snapshot from it (docs/spec.md §9.5), and the next reopen uses that
    /// file as it is (a hit) and answers the same. Round after round, the
    /// file is the size a build of the same files writes: the texts of
    /// edited and removed concepts are not carried over.
    #[test]
    fn a_splice_writes_a_cache_file_the_next_reopen_uses() {
        let (d, root) = aged_sample("spliced-written", 40);
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
        let (d, root) = aged_sample("spliced-blocked", 20);
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
        let (d, root) = aged_sample("spliced-unreadable", 20);
        fs::write(root.join("x.md"), "---\ntype: T\ntitle: ex\n---\nsecret\n").unwrap();
        age(&root, &["x.md"], hours_ago(2));
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
