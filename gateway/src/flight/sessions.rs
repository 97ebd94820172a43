//! Flight SQL sessions: the catalog and schema a client set with `SetSessionOptions`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqe_engine::engine::SessionSettings;

/// Sessions unused this long are forgotten.
const SESSION_IDLE: Duration = Duration::from_secs(3600);

/// Session settings by session key (cookie or bearer token, see [`super::protocol::session_key`]).
#[derive(Debug, Default)]
pub struct Sessions {
    sessions: Mutex<HashMap<String, (Instant, SessionSettings)>>,
}

impl Sessions {
    /// The settings of session `key`; defaults for requests without a session.
    pub fn get(&self, key: Option<&str>) -> SessionSettings {
        let (Some(key), Ok(mut sessions)) = (key, self.sessions.lock()) else {
            return SessionSettings::default();
        };
        match sessions.get_mut(key) {
            Some((used, settings)) => {
                *used = Instant::now();
                settings.clone()
            }
            None => SessionSettings::default(),
        }
    }

    pub fn update(&self, key: &str, change: impl FnOnce(&mut SessionSettings)) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|_, (used, _)| used.elapsed() < SESSION_IDLE);
            let entry = sessions
                .entry(key.to_string())
                .or_insert_with(|| (Instant::now(), SessionSettings::default()));
            entry.0 = Instant::now();
            change(&mut entry.1);
        }
    }

    pub fn close(&self, key: &str) -> bool {
        self.sessions
            .lock()
            .map(|mut s| s.remove(key).is_some())
            .unwrap_or(false)
    }
}
