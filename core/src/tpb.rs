//! Transaction parameter blocks for the isolation modes of the workload contract.

use serde::Deserialize;

const TPB_VERSION3: u8 = 3;
const TPB_CONSISTENCY: u8 = 1;
const TPB_CONCURRENCY: u8 = 2;
const TPB_WAIT: u8 = 6;
const TPB_NOWAIT: u8 = 7;
const TPB_READ: u8 = 8;
const TPB_WRITE: u8 = 9;
const TPB_READ_COMMITTED: u8 = 15;
const TPB_REC_VERSION: u8 = 17;
const TPB_NO_REC_VERSION: u8 = 18;
const TPB_LOCK_TIMEOUT: u8 = 21;
/// Firebird 4.0+; an older engine refuses the transaction, which fails the run up front.
const TPB_READ_CONSISTENCY: u8 = 22;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    Snapshot,
    ReadCommitted,
    ReadConsistency,
    /// Firebird's "table stability" (isc_tpb_consistency).
    Serializable,
    /// Read committed waiting for the latest version of a record another transaction is
    /// changing: not in the workload format, but what a traced application may have run.
    ReadCommittedNoRecVersion,
}

impl Isolation {
    pub const ALL: [Isolation; 4] = [
        Isolation::Snapshot,
        Isolation::ReadCommitted,
        Isolation::ReadConsistency,
        Isolation::Serializable,
    ];

    /// Its name in the workload contract.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Snapshot => "snapshot",
            Isolation::ReadCommitted => "read_committed",
            Isolation::ReadConsistency => "read_consistency",
            Isolation::Serializable => "serializable",
            Isolation::ReadCommittedNoRecVersion => "read_committed_no_rec_version",
        }
    }

    pub fn parse(text: &str) -> Option<Isolation> {
        Isolation::ALL
            .into_iter()
            .chain([Isolation::ReadCommittedNoRecVersion])
            .find(|i| i.name() == text)
    }
}

/// `lock_timeout`: None = wait for ever, Some(0) = no wait, Some(n) = wait n seconds.
pub fn build_tpb(isolation: Isolation, read_only: bool, lock_timeout: Option<u32>) -> Vec<u8> {
    let mut tpb = vec![TPB_VERSION3, if read_only { TPB_READ } else { TPB_WRITE }];
    match isolation {
        Isolation::Snapshot => tpb.push(TPB_CONCURRENCY),
        Isolation::ReadCommitted => tpb.extend([TPB_READ_COMMITTED, TPB_REC_VERSION]),
        Isolation::ReadConsistency => tpb.extend([TPB_READ_COMMITTED, TPB_READ_CONSISTENCY]),
        Isolation::Serializable => tpb.push(TPB_CONSISTENCY),
        Isolation::ReadCommittedNoRecVersion => {
            tpb.extend([TPB_READ_COMMITTED, TPB_NO_REC_VERSION])
        }
    }
    match lock_timeout {
        None => tpb.push(TPB_WAIT),
        Some(0) => tpb.push(TPB_NOWAIT),
        Some(seconds) => {
            tpb.extend([TPB_WAIT, TPB_LOCK_TIMEOUT, 4]);
            tpb.extend(seconds.to_le_bytes());
        }
    }
    tpb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolation_and_wait_modes() {
        assert_eq!(
            build_tpb(Isolation::ReadCommitted, true, None),
            vec![3, 8, 15, 17, 6]
        );
        assert_eq!(
            build_tpb(Isolation::Snapshot, false, Some(0)),
            vec![3, 9, 2, 7]
        );
        assert_eq!(
            build_tpb(Isolation::ReadConsistency, false, Some(10)),
            vec![3, 9, 15, 22, 6, 21, 4, 10, 0, 0, 0]
        );
        assert_eq!(
            build_tpb(Isolation::Serializable, false, None),
            vec![3, 9, 1, 6]
        );
        assert_eq!(
            Isolation::parse("read_consistency"),
            Some(Isolation::ReadConsistency)
        );
        assert_eq!(Isolation::parse("dirty"), None);
    }
}
