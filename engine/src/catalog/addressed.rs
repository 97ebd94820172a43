//! What a table name addresses beyond the table's current state: Trino's metadata tables
//! (`"orders$snapshots"`) and, for `FOR VERSION AS OF` / `FOR TIMESTAMP AS OF` (which the
//! dialect folds into the name it plans, Trino's old `"orders@<snapshot id>"` form), a snapshot
//! in the table's past.

/// A table of facts about an Iceberg table, named `<table>$<kind>` as in Trino.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataTable {
    Snapshots,
    History,
    Properties,
    Refs,
    Files,
    Manifests,
    Partitions,
}

impl MetadataTable {
    fn from_suffix(suffix: &str) -> Option<Self> {
        Some(match suffix {
            "snapshots" => Self::Snapshots,
            "history" => Self::History,
            "properties" => Self::Properties,
            "refs" => Self::Refs,
            "files" => Self::Files,
            "manifests" => Self::Manifests,
            "partitions" => Self::Partitions,
            _ => return None,
        })
    }
}

/// Which state of a table a name reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addressed {
    /// Its current snapshot.
    Current,
    /// `FOR VERSION AS OF <snapshot id>`.
    Snapshot(i64),
    /// `FOR VERSION AS OF '<branch or tag>'`.
    Reference(String),
    /// `FOR TIMESTAMP AS OF …`: the snapshot current at this instant (epoch milliseconds).
    AsOf(i64),
    Metadata(MetadataTable),
}

const REFERENCE: &str = "@ref:";
const AS_OF: &str = "@as_of:";

impl Addressed {
    /// The name the planner looks up for `table` in this state.
    pub fn name_for(&self, table: &str) -> String {
        match self {
            Addressed::Current => table.to_string(),
            Addressed::Snapshot(id) => format!("{table}@{id}"),
            Addressed::Reference(name) => format!("{table}{REFERENCE}{name}"),
            Addressed::AsOf(millis) => format!("{table}{AS_OF}{millis}"),
            Addressed::Metadata(kind) => {
                let suffix = match kind {
                    MetadataTable::Snapshots => "snapshots",
                    MetadataTable::History => "history",
                    MetadataTable::Properties => "properties",
                    MetadataTable::Refs => "refs",
                    MetadataTable::Files => "files",
                    MetadataTable::Manifests => "manifests",
                    MetadataTable::Partitions => "partitions",
                };
                format!("{table}${suffix}")
            }
        }
    }

    /// The table a looked-up name is of, and the state it addresses; a name that addresses
    /// nothing else (an unknown `$` suffix, say) is a table's own name.
    pub fn parse(name: &str) -> (&str, Addressed) {
        if let Some((table, reference)) = name.split_once(REFERENCE)
            && !table.is_empty()
            && !reference.is_empty()
        {
            return (table, Addressed::Reference(reference.to_string()));
        }
        if let Some((table, millis)) = name.rsplit_once(AS_OF)
            && let Ok(millis) = millis.parse()
            && !table.is_empty()
        {
            return (table, Addressed::AsOf(millis));
        }
        if let Some((table, id)) = name.rsplit_once('@')
            && let Ok(id) = id.parse()
            && !table.is_empty()
        {
            return (table, Addressed::Snapshot(id));
        }
        if let Some((table, suffix)) = name.rsplit_once('$')
            && let Some(kind) = MetadataTable::from_suffix(suffix)
            && !table.is_empty()
        {
            return (table, Addressed::Metadata(kind));
        }
        (name, Addressed::Current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_survives_its_name() {
        for addressed in [
            Addressed::Current,
            Addressed::Snapshot(8_744_736_658_442_914_487),
            Addressed::Snapshot(-3),
            Addressed::Reference("audit-2024".into()),
            Addressed::AsOf(1_700_000_000_123),
            Addressed::Metadata(MetadataTable::Snapshots),
            Addressed::Metadata(MetadataTable::History),
            Addressed::Metadata(MetadataTable::Properties),
            Addressed::Metadata(MetadataTable::Refs),
            Addressed::Metadata(MetadataTable::Files),
            Addressed::Metadata(MetadataTable::Manifests),
            Addressed::Metadata(MetadataTable::Partitions),
        ] {
            let name = addressed.name_for("orders");
            assert_eq!(Addressed::parse(&name), ("orders", addressed), "{name}");
        }
    }

    #[test]
    fn other_names_are_plain_tables() {
        for name in [
            "orders",
            "a$b",
            "price$",
            "$snapshots",
            "x@y",
            "@5",
            "mail@home$x",
        ] {
            assert_eq!(Addressed::parse(name), (name, Addressed::Current), "{name}");
        }
    }
}
