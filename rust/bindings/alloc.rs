//! The extension's allocator: loading a bundle makes and frees millions of
//! small blocks (bodies, index chunks) from several threads, which mimalloc
//! does faster than the platform's malloc (docs/memory-model.md).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Give what a load allocated and freed (file texts, index chunks, merge
/// buffers) back to the OS: mimalloc v2 keeps freed pages in the heap of the
/// thread that allocated them until that thread allocates again, and the
/// pool's threads sleep after a load. Each thread collects its own heap.
pub fn release_freed_memory() {
    // SAFETY: `mi_collect` only walks and trims the calling thread's own heap
    // (and abandoned segments); it is safe to call from any thread at any time.
    rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
    unsafe { libmimalloc_sys::mi_collect(true) };
}
