//! XSQLDA descriptors with their data and indicator buffers, allocated once per statement.
//!
//! The library keeps raw pointers into these buffers between calls, so a descriptor never
//! reallocates after `allocate_buffers`; moving the owning struct is fine (heap storage stays).

use std::ptr::addr_of_mut;

use crate::ffi::{
    xsqlda_length, XsqlVar, Xsqlda, SQLDA_VERSION1, SQL_DOUBLE, SQL_INT64, SQL_VARYING,
};
use crate::params::Bind;

pub struct SqlDa {
    storage: Vec<u64>,
    data: Vec<u64>,
    indicators: Vec<i16>,
}

const SQL_TEXT: i16 = 452;

impl SqlDa {
    pub fn new(capacity: usize) -> SqlDa {
        let words = xsqlda_length(capacity).div_ceil(8);
        let mut da = SqlDa {
            storage: vec![0u64; words],
            data: Vec::new(),
            indicators: Vec::new(),
        };
        let p = da.as_mut_ptr();
        // SAFETY: storage is zeroed and large enough for the header and `capacity` XSQLVARs.
        unsafe {
            (*p).version = SQLDA_VERSION1 as i16;
            (*p).sqln = capacity.max(1) as i16;
            (*p).sqldabc = xsqlda_length(capacity) as i32;
        }
        da
    }

    pub fn as_mut_ptr(&mut self) -> *mut Xsqlda {
        self.storage.as_mut_ptr() as *mut Xsqlda
    }

    pub fn capacity(&self) -> usize {
        // SAFETY: storage always holds an initialised header.
        unsafe { (*(self.storage.as_ptr() as *const Xsqlda)).sqln as usize }
    }

    /// Number of columns or parameters the last describe reported.
    pub fn count(&self) -> usize {
        // SAFETY: as above.
        unsafe { (*(self.storage.as_ptr() as *const Xsqlda)).sqld.max(0) as usize }
    }

    pub fn var(&mut self, index: usize) -> &mut XsqlVar {
        assert!(index < self.capacity());
        let p = self.as_mut_ptr();
        // SAFETY: `index` is within the XSQLVARs this allocation holds.
        unsafe { &mut *(addr_of_mut!((*p).sqlvar) as *mut XsqlVar).add(index) }
    }

    pub fn alias(&mut self, index: usize) -> String {
        let var = self.var(index);
        let len = (var.aliasname_length.max(0) as usize).min(32);
        let bytes: Vec<u8> = var.aliasname[..len].iter().map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).trim().to_uppercase()
    }

    /// Output columns: keep each described type (plus a null indicator), except the ones in
    /// `as_double`, which the engine converts to DOUBLE PRECISION for the tally sums.
    pub fn prepare_outputs(&mut self, as_double: &[usize]) {
        let n = self.count();
        let mut sizes = Vec::with_capacity(n);
        for i in 0..n {
            let var = self.var(i);
            if as_double.contains(&i) {
                var.sqltype = SQL_DOUBLE | 1;
                var.sqlscale = 0;
                var.sqllen = 8;
            } else {
                var.sqltype |= 1;
            }
            let base = var.sqltype & !1;
            let extra = if base == SQL_VARYING { 2 } else { 0 };
            sizes.push(var.sqllen.max(0) as usize + extra);
        }
        self.allocate_buffers(&sizes);
    }

    /// Input parameters: our own types per generator, whatever the statement declares;
    /// Firebird converts them as it would a literal.
    pub fn prepare_inputs(&mut self, binds: &[Bind]) {
        let mut sizes = Vec::with_capacity(binds.len());
        for (i, bind) in binds.iter().enumerate() {
            let var = self.var(i);
            let described_text = matches!(var.sqltype & !1, SQL_VARYING | SQL_TEXT);
            let charset = if described_text { var.sqlsubtype } else { 0 };
            var.sqlscale = 0;
            var.sqlsubtype = 0;
            let size = match *bind {
                Bind::Int | Bind::Null => {
                    var.sqltype = SQL_INT64 | 1;
                    var.sqllen = 8;
                    8
                }
                Bind::Float => {
                    var.sqltype = SQL_DOUBLE | 1;
                    var.sqllen = 8;
                    8
                }
                Bind::Text { max_len } => {
                    var.sqltype = SQL_VARYING | 1;
                    var.sqlsubtype = charset;
                    var.sqllen = max_len as i16;
                    max_len + 2
                }
            };
            sizes.push(size);
        }
        self.allocate_buffers(&sizes);
        for (i, bind) in binds.iter().enumerate() {
            if *bind == Bind::Null {
                // SAFETY: indicator pointers were just set to valid slots.
                unsafe { *self.var(i).sqlind = -1 };
            }
        }
    }

    fn allocate_buffers(&mut self, sizes: &[usize]) {
        let words: usize = sizes.iter().map(|s| s.div_ceil(8).max(1)).sum();
        self.data = vec![0u64; words.max(1)];
        self.indicators = vec![0i16; sizes.len().max(1)];
        let base = self.data.as_mut_ptr();
        let ind = self.indicators.as_mut_ptr();
        let mut offset = 0;
        for (i, size) in sizes.iter().enumerate() {
            // SAFETY: offsets stay inside `data`; `ind` has one slot per variable.
            let (data_ptr, ind_ptr) = unsafe { (base.add(offset) as *mut i8, ind.add(i)) };
            let var = self.var(i);
            var.sqldata = data_ptr;
            var.sqlind = ind_ptr;
            offset += size.div_ceil(8).max(1);
        }
    }

    #[inline]
    pub fn data_ptr(&mut self, index: usize) -> *mut u8 {
        self.var(index).sqldata as *mut u8
    }

    #[cfg(test)]
    pub fn is_null(&mut self, index: usize) -> bool {
        // SAFETY: indicator pointers point into `indicators` once buffers are allocated.
        unsafe { *self.var(index).sqlind < 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_follow_binds() {
        let mut da = SqlDa::new(3);
        // SAFETY: test writes sqld as a describe would.
        unsafe { (*da.as_mut_ptr()).sqld = 3 };
        da.prepare_inputs(&[Bind::Int, Bind::Text { max_len: 5 }, Bind::Null]);
        assert_eq!(da.var(0).sqltype, SQL_INT64 | 1);
        assert_eq!(da.var(1).sqllen, 5);
        assert!(da.is_null(2));
        assert!(!da.is_null(0));
        let (a, b) = (da.data_ptr(0) as usize, da.data_ptr(1) as usize);
        assert_eq!(b - a, 8);
        assert_eq!(da.count(), 3);
        assert_eq!(da.capacity(), 3);
    }
}
