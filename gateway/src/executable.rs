//! Programs on PATH, and how a person runs this one again from a shell.

use std::path::PathBuf;

/// Where PATH finds `program`, if anywhere.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// How to run this binary again from a shell: `sqe` when that is what PATH finds, else its
/// path, quoted for the shell (a user who started it with `cargo run` has no `sqe` on PATH).
pub fn this_program() -> String {
    let Ok(exe) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return "sqe".to_string();
    };
    let found = on_path("sqe").and_then(|found| std::fs::canonicalize(found).ok());
    if found.as_ref() == Some(&exe) {
        return "sqe".to_string();
    }
    shell_word(&exe.display().to_string())
}

/// `text` as one word of a POSIX shell command.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_for_the_shell_only_when_needed() {
        assert_eq!(
            shell_word("/work/target/debug/sqe"),
            "/work/target/debug/sqe"
        );
        assert_eq!(shell_word("/my dir/sqe"), "'/my dir/sqe'");
        assert_eq!(shell_word("/a$b/sqe"), "'/a$b/sqe'");
        assert_eq!(shell_word("/it's/sqe"), "'/it'\\''s/sqe'");
    }
}
