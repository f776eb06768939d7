//! A switch's learnt MAC addresses: where each was last seen, in one word
//! per address. Written by hand because the lookup is most of a learning
//! controller's work under load: a general map (hashbrown, 16-byte entries
//! behind a separate control array) reads two cache lines per lookup and
//! holds 1,000 addresses in 34 KiB, and under load those lines are gone
//! from the cache by the time the switch's next batch comes. Here an entry
//! is the address (48 bits) and the port (16 bits) in one `u64`, in an
//! open-addressed array (linear probing, at most half full): one line per
//! lookup, 16 KiB for 1,000 addresses.
//!
//! The addresses come from the network, so the hash is seeded at random
//! per table (foldhash): nobody can aim collisions at a table they cannot
//! see. The table is bounded (`LIMIT` addresses): when it is full, new
//! addresses are not learnt (their packets are flooded, as a switch with a
//! full forwarding table does) and known ones still move.

use std::collections::HashMap;
use std::hash::BuildHasher;

/// The most addresses one switch's table holds.
pub const LIMIT: usize = 1 << 16;

/// The port code of an entry whose port does not fit in 16 bits (OpenFlow
/// 1.3 ports are 32 bits); its port is in the side map.
const WIDE: u64 = 0xffff;

pub struct MacTable {
    /// 0: empty; else `(code << 48) | mac`, where code is the port plus one
    /// (ports 0..=0xfffd), or `WIDE`.
    slots: Vec<u64>,
    len: usize,
    hasher: foldhash::fast::RandomState,
    /// Ports of the entries coded `WIDE`, by address.
    wide: HashMap<u64, u32, foldhash::fast::RandomState>,
}

const MAC_MASK: u64 = (1 << 48) - 1;

impl Default for MacTable {
    fn default() -> Self {
        MacTable {
            slots: vec![0; 16],
            len: 0,
            hasher: foldhash::fast::RandomState::default(),
            wide: HashMap::default(),
        }
    }
}

impl MacTable {
    /// How many addresses it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where `mac` (the address as the low 48 bits) was last seen.
    #[inline]
    pub fn get(&self, mac: u64) -> Option<u32> {
        let (i, found) = self.probe(mac);
        found.then(|| self.port_of(self.slots[i], mac))
    }

    /// The slot holding `mac` (true), or the empty slot where it would go
    /// (false). The table is never more than half full, so there is one.
    #[inline]
    fn probe(&self, mac: u64) -> (usize, bool) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(mac) & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                return (i, false);
            }
            if s & MAC_MASK == mac {
                return (i, true);
            }
            i = (i + 1) & mask;
        }
    }

    /// Records that `mac` was seen on `port`; false when the table is full
    /// and `mac` is new (not learnt).
    #[inline]
    pub fn insert(&mut self, mac: u64, port: u32) -> bool {
        let mac = mac & MAC_MASK;
        let code = if port < WIDE as u32 - 1 { port as u64 + 1 } else { WIDE };
        let entry = (code << 48) | mac;
        let (i, found) = self.probe(mac);
        if found {
            if self.slots[i] != entry {
                self.slots[i] = entry;
            }
            self.note_wide(mac, code, port);
            return true;
        }
        if self.len >= LIMIT {
            return false;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
            return self.insert(mac, port);
        }
        self.slots[i] = entry;
        self.len += 1;
        self.note_wide(mac, code, port);
        true
    }

    fn note_wide(&mut self, mac: u64, code: u64, port: u32) {
        if code == WIDE {
            self.wide.insert(mac, port);
        } else if !self.wide.is_empty() {
            self.wide.remove(&mac);
        }
    }

    fn port_of(&self, slot: u64, mac: u64) -> u32 {
        match slot >> 48 {
            WIDE => self.wide.get(&mac).copied().unwrap_or(0),
            code => code as u32 - 1,
        }
    }

    fn home(&self, mac: u64) -> usize {
        self.hasher.hash_one(mac) as usize
    }

    fn grow(&mut self) {
        let bigger = vec![0; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, bigger);
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|&s| s != 0) {
            let mut i = self.home(s & MAC_MASK) & mask;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The table answers as a map does, for any sequence of sightings,
        /// narrow ports and wide, the zero address included.
        #[test]
        fn it_answers_as_a_map_does(ops in proptest::collection::vec((0u64..300, prop_oneof![0u32..8, 0xfffcu32..0x1_0002, Just(u32::MAX)]), 0..2000)) {
            let mut t = MacTable::default();
            let mut model = HashMap::new();
            for &(k, port) in &ops {
                // Spread the keys over all 48 bits, keep zero.
                let mac = (k.wrapping_mul(0x9e37_79b9_7f4a_7c15)) & MAC_MASK;
                prop_assert!(t.insert(mac, port));
                model.insert(mac, port);
                prop_assert_eq!(t.get(mac), Some(port));
            }
            prop_assert_eq!(t.len(), model.len());
            for k in 0..300u64 {
                let mac = (k.wrapping_mul(0x9e37_79b9_7f4a_7c15)) & MAC_MASK;
                prop_assert_eq!(t.get(mac), model.get(&mac).copied());
            }
        }
    }

    #[test]
    fn a_full_table_learns_nothing_new_and_still_moves_what_it_knows() {
        let mut t = MacTable::default();
        for m in 0..LIMIT as u64 {
            assert!(t.insert(m + 1, 1));
        }
        assert_eq!(t.len(), LIMIT);
        assert!(!t.insert(LIMIT as u64 + 10, 2));
        assert_eq!(t.get(LIMIT as u64 + 10), None);
        assert!(t.insert(5, 3));
        assert_eq!(t.get(5), Some(3));
        assert_eq!(t.len(), LIMIT);
        assert!(t.slots.len() <= 2 * LIMIT);
    }

    #[test]
    fn two_tables_hash_differently() {
        let (a, b) = (MacTable::default(), MacTable::default());
        assert!((1..100u64).any(|m| a.home(m) != b.home(m)));
    }
}
