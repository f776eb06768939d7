//! One flow table's classifier: tuple-space search. Rules are grouped by
//! mask into subtables; each subtable is a hash map from the masked key to
//! the rules with that exact masked value (highest priority first). A
//! lookup probes subtables in descending order of their highest priority
//! and stops as soon as no remaining subtable can beat the best match, so
//! its cost follows the number of distinct masks, not the number of rules.

use crate::flow::Rule;
use crate::key::{Key, KEY_WORDS};
use rustc_hash::FxHashMap;
use std::sync::Arc;

struct Subtable {
    mask: Key,
    /// Indices of the mask's non-zero words.
    words: Vec<u8>,
    rules: FxHashMap<Key, Vec<Arc<Rule>>>,
    /// An upper bound on the priorities held (exact after inserts; may be
    /// stale-high after removals, which only makes lookups probe more).
    max_priority: u16,
    count: usize,
}

#[derive(Default)]
pub struct Classifier {
    subtables: Vec<Subtable>,
    /// Subtable indices in descending `max_priority`.
    order: Vec<usize>,
    by_mask: FxHashMap<Key, usize>,
    count: usize,
}

impl Classifier {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of distinct masks.
    pub fn subtables(&self) -> usize {
        self.subtables.iter().filter(|s| s.count > 0).count()
    }

    /// The highest-priority rule matching `key`. Among equal priorities the
    /// first found wins (OpenFlow leaves that case undefined).
    #[inline]
    pub fn lookup(&self, key: &Key) -> Option<&Arc<Rule>> {
        let mut best: Option<&Arc<Rule>> = None;
        for &i in &self.order {
            let st = &self.subtables[i];
            if let Some(b) = best {
                if b.priority >= st.max_priority {
                    break;
                }
            }
            if st.count == 0 {
                continue;
            }
            let probe = key.masked_words(&st.mask, &st.words);
            if let Some(rules) = st.rules.get(&probe) {
                let r = &rules[0];
                if best.is_none_or(|b| r.priority > b.priority) {
                    best = Some(r);
                }
            }
        }
        best
    }

    fn reorder(&mut self) {
        let mut order: Vec<usize> = (0..self.subtables.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.subtables[i].max_priority));
        self.order = order;
    }

    /// The rule with exactly this match and priority.
    pub fn find_strict(&self, value: &Key, mask: &Key, priority: u16) -> Option<&Arc<Rule>> {
        let st = &self.subtables[*self.by_mask.get(mask)?];
        st.rules.get(value)?.iter().find(|r| r.priority == priority)
    }

    /// Adds `rule`, replacing (and returning) one with the same match and
    /// priority.
    pub fn insert(&mut self, rule: Arc<Rule>) -> Option<Arc<Rule>> {
        let idx = match self.by_mask.get(&rule.mask) {
            Some(&i) => i,
            None => {
                let words = (0..KEY_WORDS)
                    .filter(|&w| rule.mask.word(w) != 0)
                    .map(|w| w as u8)
                    .collect();
                self.subtables.push(Subtable {
                    mask: rule.mask,
                    words,
                    rules: FxHashMap::default(),
                    max_priority: 0,
                    count: 0,
                });
                let i = self.subtables.len() - 1;
                self.by_mask.insert(rule.mask, i);
                self.reorder();
                i
            }
        };
        let st = &mut self.subtables[idx];
        let bucket = st.rules.entry(rule.value).or_default();
        let priority = rule.priority;
        if let Some(pos) = bucket.iter().position(|r| r.priority == priority) {
            return Some(std::mem::replace(&mut bucket[pos], rule));
        }
        let pos = bucket
            .iter()
            .position(|r| r.priority < priority)
            .unwrap_or(bucket.len());
        bucket.insert(pos, rule);
        st.count += 1;
        self.count += 1;
        if st.count == 1 || priority > st.max_priority {
            st.max_priority = priority;
            self.reorder();
        }
        None
    }

    /// Removes the rule with this match and priority.
    pub fn remove(&mut self, value: &Key, mask: &Key, priority: u16) -> Option<Arc<Rule>> {
        let idx = *self.by_mask.get(mask)?;
        let st = &mut self.subtables[idx];
        let bucket = st.rules.get_mut(value)?;
        let pos = bucket.iter().position(|r| r.priority == priority)?;
        let r = bucket.remove(pos);
        if bucket.is_empty() {
            st.rules.remove(value);
        }
        st.count -= 1;
        self.count -= 1;
        Some(r)
    }

    /// Every rule, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Rule>> {
        self.subtables.iter().flat_map(|s| s.rules.values().flatten())
    }

    /// Rules for which `pred` holds.
    pub fn select(&self, pred: impl Fn(&Rule) -> bool) -> Vec<Arc<Rule>> {
        self.iter().filter(|r| pred(r)).cloned().collect()
    }

    pub fn clear(&mut self) {
        *self = Classifier::default();
    }
}
