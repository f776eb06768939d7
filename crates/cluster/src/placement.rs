//! Which member should master a switch: rendezvous (highest random
//! weight) hashing of the datapath id over the live members (or, while
//! that member lacks the switch, over those that have it). Masters spread
//! evenly over the members, and when a member joins or leaves only the
//! switches it wins or held move.

/// 64-bit FNV-1a, then a finaliser (splitmix64) so near names and ids
/// spread; stable across runs and machines (members must agree).
fn weight(member: &str, dpid: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in member.as_bytes().iter().chain(&dpid.to_be_bytes()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The member among `candidates` that should master `dpid` (None when
/// there is none). Ties, which need equal 64-bit weights, go to the
/// smaller name.
pub fn preferred<'a, I>(dpid: u64, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    candidates
        .into_iter()
        .max_by(|a, b| weight(a, dpid).cmp(&weight(b, dpid)).then_with(|| b.cmp(a)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(members: &[&str], n: u64) -> Vec<usize> {
        let mut c = vec![0; members.len()];
        for d in 1..=n {
            let p = preferred(d, members.iter().copied()).unwrap();
            c[members.iter().position(|m| *m == p).unwrap()] += 1;
        }
        c
    }

    #[test]
    fn masters_spread_evenly() {
        for members in [&["c1", "c2"][..], &["c1", "c2", "c3"], &["m1", "m2", "m3", "m4", "m5"]] {
            let n = 3000;
            let even = n as usize / members.len();
            for c in count(members, n) {
                assert!(c.abs_diff(even) < even / 8, "{members:?}: {c} of {n}, even is {even}");
            }
        }
    }

    #[test]
    fn a_join_moves_only_what_the_new_member_wins() {
        let before = ["c1", "c2"];
        let after = ["c1", "c2", "c3"];
        let mut moved = 0;
        for d in 1..=3000u64 {
            let a = preferred(d, before.iter().copied()).unwrap();
            let b = preferred(d, after.iter().copied()).unwrap();
            if a != b {
                assert_eq!(b, "c3", "switch {d} moved from {a} to {b}, not to the newcomer");
                moved += 1;
            }
        }
        assert!((800..1200).contains(&moved), "a third should move: {moved}");
    }

    #[test]
    fn every_member_agrees_whatever_the_order() {
        for d in [1u64, 0xdead_beef, u64::MAX] {
            let a = preferred(d, ["c1", "c2", "c3"]);
            let b = preferred(d, ["c3", "c1", "c2"]);
            assert_eq!(a, b);
        }
        assert_eq!(preferred(7, std::iter::empty()), None);
    }
}
