//! Reports: turning results into what people and scripts read. One file per format; none
//! of them measures or stores anything.

pub mod bisect;
pub mod compare;
pub mod document;
pub mod gobench;
pub mod html;
pub mod json;
pub mod markdown;
pub mod plot;
pub mod table;
pub mod text;
