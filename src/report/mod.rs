//! Reports: turning results into what people and scripts read. One file per format; none
//! of them measures or stores anything.

pub mod json;
pub mod text;
