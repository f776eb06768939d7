//! placeholder
pub mod msg_type { pub fn name(_t: u8) -> &'static str { "UNKNOWN" } }
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Body {}
impl Body {
    pub fn msg_type(&self) -> u8 { 0 }
    pub fn decode(_t: u8, _b: &[u8]) -> Result<Body, crate::DecodeError> { todo!() }
    pub fn encode(&self, _o: &mut Vec<u8>) {}
}
