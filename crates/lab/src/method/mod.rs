//! The measurement methods, apart from traffic and I/O, unit-tested
//! against in-memory models.

pub mod rfc2544;
