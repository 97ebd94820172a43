//! The Arrow Flight SQL endpoint: statement queries (GetFlightInfo + DoGet) and updates (DoPut).
//!
//! Protocol parsing is arrow-flight's; [`service`] maps Flight SQL calls onto the engine and
//! [`tickets`] holds planned statements between GetFlightInfo and DoGet.

mod service;
mod tickets;

pub use service::{SqeFlightSqlService, flight_sql_server};
pub use tickets::PlannedStatements;
