//! The shell's own commands: `quit`, `help`, `USE`, and the backslash commands of psql's
//! kind (`\l`, `\dt`, `\d t`, `\x`, `\timing`, `\format`, `\maxrows`).

use super::input::unquote;
use super::output::OutputFormat;

/// A client-side command the shell handles itself instead of sending it to the server.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ShellCommand {
    Quit,
    Help,
    /// `USE schema` or `USE catalog.schema`.
    Use {
        catalog: Option<String>,
        schema: String,
    },
    /// A shortcut for a statement the server answers (`\dt` is `SHOW TABLES`).
    Sql(String),
    /// `\timing [on|off]`: whether the line after a result shows its time and size.
    Timing(Option<bool>),
    /// `\x [on|off]`: one line per column instead of an aligned table.
    Expanded(Option<bool>),
    /// `\format table|vertical|csv|json`.
    Format(OutputFormat),
    /// `\maxrows N`: how many rows an interactive result shows (0: all).
    MaxRows(u64),
    /// A backslash command the shell does not know, or used wrongly.
    Invalid(String),
}

/// Recognizes the shell's own commands; anything else is SQL for the server.
pub(super) fn shell_command(statement: &str) -> Option<ShellCommand> {
    let statement = statement.trim().trim_end_matches(';').trim();
    let lower = statement.to_ascii_lowercase();
    match lower.as_str() {
        "quit" | "exit" | "\\q" => return Some(ShellCommand::Quit),
        "help" | "\\?" | "\\h" => return Some(ShellCommand::Help),
        _ => {}
    }
    if let Some(command) = statement.strip_prefix('\\') {
        return Some(backslash(command));
    }
    let mut words = statement.split_whitespace();
    let keyword = words.next()?;
    let target = words.next()?;
    if !keyword.eq_ignore_ascii_case("use") || words.next().is_some() {
        return None;
    }
    let parts: Vec<String> = target.split('.').map(unquote).collect();
    match parts.as_slice() {
        [schema] if !schema.is_empty() => Some(ShellCommand::Use {
            catalog: None,
            schema: schema.clone(),
        }),
        [catalog, schema] if !catalog.is_empty() && !schema.is_empty() => Some(ShellCommand::Use {
            catalog: Some(catalog.clone()),
            schema: schema.clone(),
        }),
        _ => None,
    }
}

fn backslash(command: &str) -> ShellCommand {
    let mut words = command.split_whitespace();
    let name = words.next().unwrap_or_default();
    let argument = words.next();
    if words.next().is_some() {
        return ShellCommand::Invalid(format!("\\{name} takes at most one argument"));
    }
    let from = |statement: &str| match argument {
        Some(scope) => ShellCommand::Sql(format!("{statement} FROM {scope}")),
        None => ShellCommand::Sql(statement.to_string()),
    };
    match (name, argument) {
        ("l", None) => ShellCommand::Sql("SHOW CATALOGS".into()),
        ("dn", _) => from("SHOW SCHEMAS"),
        ("dt", _) | ("d", None) => from("SHOW TABLES"),
        ("d", Some(table)) => ShellCommand::Sql(format!("SHOW COLUMNS FROM {table}")),
        ("timing", switch) => match on_off(switch) {
            Ok(on) => ShellCommand::Timing(on),
            Err(e) => ShellCommand::Invalid(e),
        },
        ("x", switch) => match on_off(switch) {
            Ok(on) => ShellCommand::Expanded(on),
            Err(e) => ShellCommand::Invalid(e),
        },
        ("format", Some(format)) => {
            match <OutputFormat as clap::ValueEnum>::from_str(format, true) {
                Ok(format) => ShellCommand::Format(format),
                Err(_) => ShellCommand::Invalid(format!(
                    "unknown format {format}: use table, vertical, csv or json"
                )),
            }
        }
        ("maxrows", Some(rows)) => match rows.parse() {
            Ok(rows) => ShellCommand::MaxRows(rows),
            Err(_) => ShellCommand::Invalid(format!(
                "\\maxrows takes a number of rows (0 for all), not {rows}"
            )),
        },
        ("format" | "maxrows", None) => ShellCommand::Invalid(format!(
            "\\{name} needs an argument; \\? lists the commands"
        )),
        _ => ShellCommand::Invalid(format!(
            "unknown command \\{command}; \\? lists the commands"
        )),
    }
}

fn on_off(switch: Option<&str>) -> Result<Option<bool>, String> {
    match switch.map(str::to_ascii_lowercase).as_deref() {
        None => Ok(None),
        Some("on") => Ok(Some(true)),
        Some("off") => Ok(Some(false)),
        Some(other) => Err(format!("expected on or off, not {other}")),
    }
}

/// What `help` prints.
pub(super) const HELP: &str = "\
Statements end with ';' and may span lines; Tab completes keywords and names. Ctrl-C cancels a
running statement (or clears the line), Ctrl-D or `quit` leaves.
Shell commands:
  USE schema | USE catalog.schema   set the default for unqualified names
  \\l                                list catalogs
  \\dn [catalog]                     list schemas
  \\dt [schema] | \\d                 list tables
  \\d table                          describe a table's columns
  \\x [on|off]                       one line per column (vertical) or aligned tables
  \\format table|vertical|csv|json   how results are written
  \\timing [on|off]                  show each result's time and size
  \\maxrows N                        rows an interactive result shows (0: all)
  help | \\?                         this text
  quit | exit | \\q                  leave
Results longer than the screen go through $SQE_PAGER or $PAGER (default `less -FXRS`; set it
empty for none).";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_shell_commands() {
        assert_eq!(shell_command("quit"), Some(ShellCommand::Quit));
        assert_eq!(shell_command("EXIT;"), Some(ShellCommand::Quit));
        assert_eq!(shell_command(" help "), Some(ShellCommand::Help));
        assert_eq!(
            shell_command("use TPCH"),
            Some(ShellCommand::Use {
                catalog: None,
                schema: "tpch".into()
            })
        );
        assert_eq!(
            shell_command("USE iceberg.\"Mixed\""),
            Some(ShellCommand::Use {
                catalog: Some("iceberg".into()),
                schema: "Mixed".into()
            })
        );
        assert_eq!(shell_command("USE a.b.c"), None);
        assert_eq!(shell_command("user_table"), None);
        assert_eq!(shell_command("SELECT 1"), None);
    }

    #[test]
    fn backslash_commands_are_shortcuts_and_switches() {
        let sql = |s: &str| Some(ShellCommand::Sql(s.into()));
        assert_eq!(shell_command("\\l"), sql("SHOW CATALOGS"));
        assert_eq!(
            shell_command("\\dn iceberg"),
            sql("SHOW SCHEMAS FROM iceberg")
        );
        assert_eq!(shell_command("\\dt"), sql("SHOW TABLES"));
        assert_eq!(shell_command("\\d"), sql("SHOW TABLES"));
        assert_eq!(shell_command("\\dt tpch;"), sql("SHOW TABLES FROM tpch"));
        assert_eq!(shell_command("\\d nation"), sql("SHOW COLUMNS FROM nation"));
        assert_eq!(shell_command("\\x"), Some(ShellCommand::Expanded(None)));
        assert_eq!(
            shell_command("\\x off"),
            Some(ShellCommand::Expanded(Some(false)))
        );
        assert_eq!(
            shell_command("\\timing on"),
            Some(ShellCommand::Timing(Some(true)))
        );
        assert_eq!(
            shell_command("\\format CSV"),
            Some(ShellCommand::Format(OutputFormat::Csv))
        );
        assert_eq!(shell_command("\\maxrows 0"), Some(ShellCommand::MaxRows(0)));
        for wrong in [
            "\\format xml",
            "\\maxrows many",
            "\\x maybe",
            "\\nope",
            "\\d a b",
        ] {
            assert!(
                matches!(shell_command(wrong), Some(ShellCommand::Invalid(_))),
                "{wrong}"
            );
        }
    }
}
