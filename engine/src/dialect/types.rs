//! SQL names of Arrow types, as Trino spells them: the functions crate's, which name their
//! arguments' types with them in errors.

pub use sqe_functions::types::{TRINO_TYPE, TrinoType, precision_and_scale, trino_type_name};
pub use sqe_functions::{IntervalText, SixteenBytes};
