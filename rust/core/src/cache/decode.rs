//! The little-endian reader every part of a cache file is decoded with:
//! each read is bounds-checked, and a short or malformed field rejects the
//! file ([`Rejected`]) rather than panicking.

use super::Rejected;
use crate::concept::Actor;

pub(super) struct Reader<'a> {
    pub(super) b: &'a [u8],
    pub(super) at: usize,
}

pub(super) type R<T> = Result<T, Rejected>;

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or(Rejected::Truncated)?;
        let s = self.b.get(self.at..end).ok_or(Rejected::Truncated)?;
        self.at = end;
        Ok(s)
    }
    pub(super) fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }
    pub(super) fn u32(&mut self) -> R<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }
    pub(super) fn u64(&mut self) -> R<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }
    pub(super) fn u128(&mut self) -> R<u128> {
        Ok(u128::from_le_bytes(
            self.take(16)?.try_into().unwrap_or_default(),
        ))
    }
    pub(super) fn str_ref(&mut self) -> R<&'a str> {
        let n = self.u32()? as usize;
        let bytes = self.take(n)?;
        std::str::from_utf8(bytes).map_err(|_| Rejected::Corrupt("invalid UTF-8".into()))
    }
    pub(super) fn str(&mut self) -> R<String> {
        Ok(self.str_ref()?.to_string())
    }
    /// A value stored as its index (one byte) in `all`.
    pub(super) fn code<T: Copy>(&mut self, all: &[T], what: &str) -> R<T> {
        let x = self.u8()?;
        all.get(usize::from(x))
            .copied()
            .ok_or_else(|| Rejected::Corrupt(format!("{what} {x}")))
    }
    pub(super) fn flag(&mut self) -> R<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            x => Err(Rejected::Corrupt(format!("flag {x}"))),
        }
    }
    pub(super) fn opt(&mut self) -> R<Option<String>> {
        Ok(self.opt_ref()?.map(str::to_string))
    }
    pub(super) fn opt_ref(&mut self) -> R<Option<&'a str>> {
        Ok(if self.flag()? {
            Some(self.str_ref()?)
        } else {
            None
        })
    }
    pub(super) fn strs_ref(&mut self) -> R<Vec<&'a str>> {
        let n = self.u32()? as usize;
        // Each string needs at least its 4-byte length: bound the allocation.
        if n > (self.b.len() - self.at) / 4 {
            return Err(Rejected::Truncated);
        }
        (0..n).map(|_| self.str_ref()).collect()
    }
    pub(super) fn actor(&mut self) -> R<Actor> {
        Ok(Actor {
            by: self.opt()?,
            at: self.opt()?,
        })
    }
    pub(super) fn pad(&mut self) -> R<()> {
        let n = (8 - self.at % 8) % 8;
        self.take(n).map(|_| ())
    }
}
