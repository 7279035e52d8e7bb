//! docs/spec.md §1.10: a bundle loaded in id ranges is the whole bundle cut
//! at the ranges' bounds, through the cache or not, and after a refresh.

use std::fs;

use super::*;
use crate::diagnostic::Diagnostic;
use crate::fs::range::IdRange;
use crate::text::id_cmp;

fn ids(b: &Bundle) -> Vec<String> {
    b.concepts.iter().map(|c| c.id().to_string()).collect()
}

/// The parts' concepts one after the other, and their diagnostics
/// merged by path as one bundle orders them.
fn joined(parts: &[Bundle]) -> (Vec<String>, Vec<Diagnostic>) {
    let all_ids = parts.iter().flat_map(ids).collect();
    let mut d: Vec<Diagnostic> = parts.iter().flat_map(|b| b.diagnostics.clone()).collect();
    d.sort_by(|a, b| id_cmp(&a.path, &b.path));
    (all_ids, d)
}

fn ranges(cuts: &[&str]) -> Vec<IdRange> {
    let mut bounds: Vec<Option<String>> = vec![None];
    bounds.extend(cuts.iter().map(|c| Some(c.to_string())));
    bounds.push(None);
    bounds
        .windows(2)
        .map(|w| IdRange::new(w[0].clone(), w[1].clone()))
        .collect()
}

fn write_tree(root: &std::path::Path) {
    fs::create_dir_all(root.join("a/b")).unwrap();
    fs::create_dir_all(root.join("m")).unwrap();
    for (name, text) in [
        ("a.md", "---\ntype: T\ntitle: alpha\n---\nfirst word"),
        ("a/b.md", "---\ntitle: no type\n---\nsecond word"),
        (
            "a/b/c.md",
            "---\ntype: T\nstale_after: soon\n---\nthird word",
        ),
        ("a-b.md", "---\ntype: T\n"),
        ("b.md", "---\ntype: T\ntitle: beta\n---\nword word"),
        ("m/n.md", "---\ntype: T\ntags: [x]\n---\nfourth"),
        ("z.md", "---\ntype: T\n---\nlast word"),
    ] {
        fs::write(root.join(name), text).unwrap();
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("b.md"), root.join("link.md")).unwrap();
}

#[test]
fn parts_cut_the_whole_bundle_at_their_bounds() {
    let d = crate::testing::scratch_dir("parts", "cut");
    let root = d.join("root");
    write_tree(&root);
    let whole = Bundle::load(&root).unwrap();
    let want = (ids(&whole), whole.diagnostics.clone());
    assert!(want.1.len() >= 4, "{:?}", want.1);
    // Bounds between, at and inside concepts and directories.
    for cuts in [
        vec![],
        vec!["a/b"],
        vec!["a/b/c", "b.md", "m"],
        vec!["", "zz"],
    ] {
        let rs = ranges(&cuts);
        for cached in [false, true] {
            let parts: Vec<Bundle> = rs
                .iter()
                .enumerate()
                .map(|(k, r)| {
                    let file = d.join(format!("p{k}-{}.okfc", cuts.len()));
                    let c = cached.then_some(file.as_path());
                    let p = Progress::default();
                    let (b, _) = Bundle::load_range(&root, c, None, r, &p).unwrap();
                    assert!(b.concepts.iter().all(|c| r.contains(c.id())));
                    // Reopened through its own cache file: the same part.
                    if cached {
                        let (again, rep) = Bundle::load_range(&root, c, None, r, &p).unwrap();
                        assert_ne!(rep.status, CacheStatus::Rebuilt, "{}", rep.detail);
                        assert_eq!(ids(&again), ids(&b));
                        assert_eq!(again.diagnostics, b.diagnostics);
                    }
                    b
                })
                .collect();
            assert_eq!(joined(&parts), want, "cuts {cuts:?}, cached {cached}");
        }
    }
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn a_part_never_opens_another_parts_cache_file_as_its_own() {
    let d = crate::testing::scratch_dir("parts", "cache");
    let root = d.join("root");
    write_tree(&root);
    let file = d.join("one.okfc");
    let p = Progress::default();
    let rs = ranges(&["b.md"]);
    let (_, first) = Bundle::load_range(&root, Some(&file), None, &rs[0], &p).unwrap();
    assert_eq!(first.status, CacheStatus::Miss);
    // The same file named for the other part, or the whole bundle: rejected.
    let (other, r) = Bundle::load_range(&root, Some(&file), None, &rs[1], &p).unwrap();
    assert_eq!(r.status, CacheStatus::Rebuilt);
    assert!(ids(&other).iter().all(|i| rs[1].contains(i)));
    let (whole, r) = Bundle::load_cached(&root, &file).unwrap();
    assert_eq!(r.status, CacheStatus::Rebuilt);
    assert_eq!(ids(&whole), ids(&Bundle::load(&root).unwrap()));
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn a_refreshed_part_is_the_fresh_parts_of_the_changed_bundle() {
    let d = crate::testing::scratch_dir("parts", "refresh");
    let root = d.join("root");
    write_tree(&root);
    let rs = ranges(&["a/b/c", "m"]);
    let p = Progress::default();
    let parts: Vec<Bundle> = rs
        .iter()
        .map(|r| Bundle::load_range(&root, None, None, r, &p).unwrap().0)
        .collect();
    // Edit one part's file, add to another, remove from the third.
    fs::write(root.join("a/b.md"), "---\ntype: T\n---\nsecond word again").unwrap();
    fs::write(root.join("c.md"), "---\ntype: T\n---\nnew").unwrap();
    fs::remove_file(root.join("z.md")).unwrap();
    fs::create_dir_all(root.join("a/b/d")).unwrap();
    fs::write(root.join("a/b/d/e.md"), "no frontmatter").unwrap();
    let fresh: Vec<Bundle> = parts
        .iter()
        .map(|b| b.refresh().unwrap().expect("every part changed"))
        .collect();
    for (f, r) in fresh.iter().zip(&rs) {
        assert_eq!(&f.range, r);
        assert!(f.refresh().unwrap().is_none());
    }
    let whole = Bundle::load(&root).unwrap();
    assert_eq!(joined(&fresh), (ids(&whole), whole.diagnostics.clone()));
    let _ = fs::remove_dir_all(&d);
}
