//! RFC 7047's data on the wire, without I/O: atoms, sets and maps in their
//! JSON notation, the rows a `monitor` reports, and the replica those
//! reports keep up to date (table-updates applied in order, each checked
//! whole before it changes anything, so a malformed one is refused and the
//! replica stays as it was).

use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};

/// What is wrong with something the server sent.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DatumError {
    #[error("table-updates is not an object of tables")]
    NotTables,
    #[error("table {0}: not an object of rows")]
    NotRows(String),
    #[error("table {table}: row {uuid:?}: {why}")]
    BadRow { table: String, uuid: String, why: String },
}

/// A row: its columns as the server wrote them (JSON, RFC 7047 5.1).
pub type Row = Map<String, Value>;

/// Every table's rows by UUID, as the server last reported them.
#[derive(Default, Debug, Clone)]
pub struct Replica {
    pub tables: BTreeMap<String, HashMap<String, Row>>,
}

impl Replica {
    /// Applies a monitor's table-updates (the initial reply or an `update`
    /// notification). A row update whose "new" is absent deletes the row;
    /// otherwise "new" replaces the columns it names (a monitor sends all
    /// monitored columns of a new row, and the changed ones of a modified
    /// row). Nothing changes if any part is malformed.
    pub fn apply(&mut self, updates: &Value) -> Result<(), DatumError> {
        let tables = updates.as_object().ok_or(DatumError::NotTables)?;
        // Checked whole first.
        for (table, rows) in tables {
            let rows = rows.as_object().ok_or_else(|| DatumError::NotRows(table.clone()))?;
            for (uuid, change) in rows {
                let bad = |why: &str| DatumError::BadRow {
                    table: table.clone(),
                    uuid: uuid.clone(),
                    why: why.into(),
                };
                if !is_uuid(uuid) {
                    return Err(bad("not a UUID"));
                }
                let change = change.as_object().ok_or_else(|| bad("not an object"))?;
                for k in change.keys() {
                    if k != "old" && k != "new" {
                        return Err(bad(&format!("unknown member {k:?}")));
                    }
                }
                if let Some(new) = change.get("new") {
                    let new = new.as_object().ok_or_else(|| bad("\"new\" is not an object"))?;
                    for (col, v) in new {
                        check_datum(v).map_err(|why| bad(&format!("column {col}: {why}")))?;
                    }
                }
            }
        }
        for (table, rows) in tables {
            let t = self.tables.entry(table.clone()).or_default();
            for (uuid, change) in rows.as_object().into_iter().flatten() {
                match change.get("new").and_then(Value::as_object) {
                    None => {
                        t.remove(uuid);
                    }
                    Some(new) => {
                        let row = t.entry(uuid.clone()).or_default();
                        for (col, v) in new {
                            row.insert(col.clone(), v.clone());
                        }
                    }
                }
            }
        }
        Ok(())
    }

    pub fn rows(&self, table: &str) -> impl Iterator<Item = (&String, &Row)> {
        self.tables.get(table).into_iter().flatten()
    }

    pub fn row(&self, table: &str, uuid: &str) -> Option<&Row> {
        self.tables.get(table)?.get(uuid)
    }
}

/// True for the 36-character textual UUID.
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

// Text on purpose: part of an OVSDB error reply's `details`, which is text on the wire (RFC 7047).
fn check_atom(v: &Value) -> Result<(), String> {
    match v {
        Value::String(_) | Value::Bool(_) | Value::Number(_) => Ok(()),
        Value::Array(a) => match (a.first().and_then(Value::as_str), a.get(1), a.len()) {
            (Some("uuid" | "named-uuid"), Some(Value::String(_)), 2) => Ok(()),
            _ => Err(format!("{v} is not an atom")),
        },
        _ => Err(format!("{v} is not an atom")),
    }
}

/// Checks one column's value: an atom, ["set", [atoms]] or
/// ["map", [[atom, atom]...]].
// Text on purpose: an OVSDB error reply's `details`, which is text on the wire (RFC 7047).
pub fn check_datum(v: &Value) -> Result<(), String> {
    if let Some(a) = v.as_array() {
        match (a.first().and_then(Value::as_str), a.get(1), a.len()) {
            (Some("set"), Some(Value::Array(items)), 2) => return items.iter().try_for_each(check_atom),
            (Some("map"), Some(Value::Array(pairs)), 2) => {
                return pairs.iter().try_for_each(|p| match p.as_array().map(Vec::as_slice) {
                    Some([k, v]) => check_atom(k).and(check_atom(v)),
                    _ => Err(format!("{p} is not a [key, value] pair")),
                })
            }
            _ => {}
        }
    }
    check_atom(v)
}

/// The atoms of a column: a set's members, or the one atom.
pub fn atoms(v: Option<&Value>) -> Vec<&Value> {
    match v {
        None => Vec::new(),
        Some(Value::Array(a)) if a.first().and_then(Value::as_str) == Some("set") => a
            .get(1)
            .and_then(Value::as_array)
            .map(|x| x.iter().collect())
            .unwrap_or_default(),
        Some(v) => vec![v],
    }
}

/// The UUIDs a reference column holds.
pub fn uuids(v: Option<&Value>) -> Vec<&str> {
    atoms(v)
        .into_iter()
        .filter_map(|a| match a.as_array().map(Vec::as_slice) {
            Some([Value::String(t), Value::String(u)]) if t == "uuid" => Some(u.as_str()),
            _ => None,
        })
        .collect()
}

/// The strings of a column (a string, or a set of them).
pub fn strings(v: Option<&Value>) -> Vec<&str> {
    atoms(v).into_iter().filter_map(Value::as_str).collect()
}

/// An optional string column's value.
pub fn string(v: Option<&Value>) -> Option<&str> {
    strings(v).into_iter().next()
}

/// An optional integer column's value.
pub fn integer(v: Option<&Value>) -> Option<i64> {
    atoms(v).into_iter().find_map(Value::as_i64)
}

/// A map column's string-to-string pairs.
pub fn map(v: Option<&Value>) -> BTreeMap<&str, &str> {
    match v.and_then(Value::as_array).map(Vec::as_slice) {
        Some([Value::String(t), Value::Array(pairs)]) if t == "map" => pairs
            .iter()
            .filter_map(|p| match p.as_array().map(Vec::as_slice) {
                Some([Value::String(k), Value::String(v)]) => Some((k.as_str(), v.as_str())),
                _ => None,
            })
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// True for a column's default: an empty set or map, 0, "", false.
pub fn is_default(v: &Value) -> bool {
    match v {
        Value::Array(a) if matches!(a.first().and_then(Value::as_str), Some("set" | "map")) => {
            a.get(1).and_then(Value::as_array).is_some_and(Vec::is_empty)
        }
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0) || n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// Encodings for what the switch writes.
pub fn empty_set() -> Value {
    json!(["set", []])
}

pub fn optional<T: Into<Value>>(v: Option<T>) -> Value {
    match v {
        Some(v) => v.into(),
        None => empty_set(),
    }
}

pub fn int_map(pairs: &[(&str, i64)]) -> Value {
    json!(["map", pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()])
}

pub fn str_map(pairs: &[(&str, String)]) -> Value {
    json!(["map", pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()])
}

/// An `update` operation on the row `uuid` of `table`.
pub fn update_op(table: &str, uuid: &str, row: Map<String, Value>) -> Value {
    json!({"op": "update", "table": table, "where": [["_uuid", "==", ["uuid", uuid]]], "row": row})
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: &str = "0b1b4f0e-4c5e-4d55-9b5a-1c6a3c1d2e3f";
    const U2: &str = "1b1b4f0e-4c5e-4d55-9b5a-1c6a3c1d2e3f";

    #[test]
    fn rows_come_change_and_go() {
        let mut r = Replica::default();
        r.apply(&json!({"Bridge": {U1: {"new": {"name": "br0", "ports": ["set", [["uuid", U2]]], "fail_mode": ["set", []]}}}}))
            .unwrap();
        let row = r.row("Bridge", U1).unwrap();
        assert_eq!(string(row.get("name")), Some("br0"));
        assert_eq!(uuids(row.get("ports")), vec![U2]);
        assert_eq!(string(row.get("fail_mode")), None);
        r.apply(&json!({"Bridge": {U1: {"old": {"fail_mode": ["set", []]}, "new": {"fail_mode": "secure"}}}}))
            .unwrap();
        let row = r.row("Bridge", U1).unwrap();
        assert_eq!(string(row.get("fail_mode")), Some("secure"));
        assert_eq!(string(row.get("name")), Some("br0"), "columns not in the update stay");
        r.apply(&json!({"Bridge": {U1: {"old": {"name": "br0"}}}})).unwrap();
        assert!(r.row("Bridge", U1).is_none());
    }

    #[test]
    fn a_malformed_update_changes_nothing() {
        let mut r = Replica::default();
        r.apply(&json!({"Port": {U1: {"new": {"name": "p1"}}}})).unwrap();
        for bad in [
            json!([1, 2]),
            json!({"Port": 3}),
            json!({"Port": {"not-a-uuid": {"new": {}}}}),
            json!({"Port": {U2: {"new": {"name": "ok"}}, U1: {"new": {"name": {"x": 1}}}}}),
            json!({"Port": {U1: {"new": {"tag": ["set", [["uuid"]]]}}}}),
            json!({"Port": {U1: {"new": {"other_config": ["map", [["a"]]]}}}}),
            json!({"Port": {U1: {"nwe": {}}}}),
            json!({"Port": {U1: "gone"}}),
        ] {
            let before = r.tables.clone();
            assert!(r.apply(&bad).is_err(), "{bad} accepted");
            assert_eq!(r.tables, before, "{bad} changed the replica");
        }
    }

    #[test]
    fn column_values() {
        let m = json!(["map", [["datapath-id", "00000000000000aa"], ["n", "1"]]]);
        assert_eq!(map(Some(&m)).get("datapath-id"), Some(&"00000000000000aa"));
        assert_eq!(integer(Some(&json!(["set", [7]]))), Some(7));
        assert_eq!(integer(Some(&json!(7))), Some(7));
        assert_eq!(integer(Some(&json!(["set", []]))), None);
        assert_eq!(
            strings(Some(&json!(["set", ["OpenFlow10", "OpenFlow13"]]))),
            vec!["OpenFlow10", "OpenFlow13"]
        );
        assert!(is_default(&json!(["map", []])) && is_default(&json!(false)) && is_default(&json!("")));
        assert!(!is_default(&json!(["set", [1]])) && !is_default(&json!(true)) && !is_default(&json!(5)));
        assert!(is_uuid(U1) && !is_uuid("x") && !is_uuid(&U1.replace('-', "_")));
    }
}
