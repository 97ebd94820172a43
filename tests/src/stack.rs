//! The REST catalog + S3 stack `scripts/stack.sh up` started (scripts/test.sh starts one for the
//! suite and exports `SQE_STACK_DIR`).

use std::collections::HashMap;
use std::path::PathBuf;

use sqe_gateway::local::{StackSettings, read_stack_env};

/// A running stack: what SQE needs to use it, and what tests need to disturb it.
pub struct Stack {
    pub dir: PathBuf,
    pub settings: StackSettings,
    env: HashMap<String, String>,
}

impl Stack {
    /// The stack of `SQE_STACK_DIR` (default `.stack` of the checkout); an error that says how to
    /// start one when there is none.
    pub fn running() -> Result<Self, String> {
        let dir = std::env::var_os("SQE_STACK_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.stack"));
        let env = read_stack_env(&dir).map_err(|e| {
            format!("no REST catalog + S3 stack ({e}); or run the suite with scripts/test.sh")
        })?;
        let settings = StackSettings::from_env(&dir, &env).map_err(|e| e.to_string())?;
        Ok(Self {
            dir,
            settings,
            env: env.into_iter().collect(),
        })
    }

    /// A value of `stack.env`.
    pub fn get(&self, key: &str) -> Result<&str, String> {
        self.env.get(key).map(String::as_str).ok_or(format!(
            "{key} missing from {}/stack.env",
            self.dir.display()
        ))
    }
}
