//! Views: `CREATE [OR REPLACE] VIEW`, `DROP VIEW [IF EXISTS]`, and reading them. A statement
//! reads a view as Trino does, as its query in its place: before planning, every name that is
//! a view becomes a derived table of the view's SQL (its names qualified with the catalog and
//! schema it was created in, views within it read the same way), aliased by the view's name
//! and columns. So a view is planned in the reader's session (time zone, properties) and its
//! tables are scanned, pruned and distributed like any other.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::planner::object_name_to_table_reference;
use datafusion::sql::sqlparser::ast::{
    FromTable, Ident, ObjectName, ObjectNamePart, ObjectType, Query, Statement, TableAlias,
    TableAliasColumnDef, TableFactor, Visit, VisitMut, Visitor, VisitorMut,
};
use futures::future::BoxFuture;
use iceberg::{NamespaceIdent, TableIdent};
use sqe_iceberg::types::iceberg_schema_for;

use super::alter::table_reference;
use super::{Engine, SessionSettings, StatementKind};
use crate::catalog::{IcebergSchemaProvider, StoredView, TRINO_DIALECT, ViewDefinition};
use crate::dialect::parse::Label;
use crate::dialect::quoting;
use crate::dialect::views::{view_options, view_query_text};
use crate::error::{Error, ErrorCode, ObjectKind, Result};

/// How deep views may read views.
const MAX_VIEW_DEPTH: usize = 32;
/// How many view references one statement may read, counting those inside views (a view
/// reading another twice doubles it).
const MAX_VIEW_EXPANSIONS: usize = 1_000;

/// A planned CREATE VIEW or DROP VIEW.
#[derive(Debug, Clone)]
pub(super) enum ViewChange {
    Create {
        ident: TableIdent,
        definition: Box<ViewDefinition>,
        replace: bool,
    },
    Drop {
        ident: TableIdent,
        if_exists: bool,
    },
}

impl ViewChange {
    pub(super) fn kind(&self) -> StatementKind {
        match self {
            ViewChange::Create { .. } => StatementKind::CreateView,
            ViewChange::Drop { .. } => StatementKind::DropView,
        }
    }
}

impl Engine {
    /// `statement` planned if it is a CREATE VIEW or DROP VIEW; its query is checked by
    /// planning it now.
    pub(super) async fn plan_view_change(
        &self,
        session: &SessionSettings,
        state: &SessionState,
        statement: &DFStatement,
        sql: &str,
    ) -> Result<Option<ViewChange>> {
        let DFStatement::Statement(statement) = statement else {
            return Ok(None);
        };
        match statement.as_ref() {
            Statement::CreateView(create) => {
                if create.materialized || create.temporary || create.or_alter {
                    return Err(Error::NotSupported(format!(
                        "{}: SQE creates plain views",
                        create.name
                    )));
                }
                if !create.columns.is_empty() {
                    return Err(Error::NotSupported(
                        "CREATE VIEW with a column list; name the columns in the query".into(),
                    ));
                }
                let clauses = view_options(create)?;
                let ident = self.table_ident(state, &table_reference(&create.name)?)?;
                super::check_new_table_name(&ident)?;
                let text = view_query_text(sql).ok_or_else(|| Error::Syntax {
                    message: "CREATE VIEW needs AS and a query".into(),
                    location: None,
                })?;
                // The query as a reader would plan it, in this session.
                let template = Box::pin(self.template(session, &text)).await?;
                if template.kind() != StatementKind::Query {
                    return Err(Error::NotSupported(
                        "CREATE VIEW … AS: a view is a query".into(),
                    ));
                }
                // Names are folded, as every name SQE reads is.
                let names: Vec<String> = template
                    .trino_column_names()
                    .iter()
                    .map(|n| n.to_lowercase())
                    .collect();
                let mut seen = HashSet::new();
                if let Some(twice) = names.iter().find(|n| !seen.insert(n.as_str())) {
                    return Err(Error::invalid(
                        ErrorCode::DuplicateColumnName,
                        format!("Column name '{twice}' specified more than once"),
                    ));
                }
                let schema = template.dataset_schema();
                let fields: Vec<Field> = schema
                    .fields()
                    .iter()
                    .zip(&names)
                    .map(|(f, name)| Field::new(name, f.data_type().clone(), true))
                    .collect();
                let columns = iceberg_schema_for(&Schema::new(fields), true)?;
                let defaults = &state.config_options().catalog;
                Ok(Some(ViewChange::Create {
                    definition: Box::new(ViewDefinition {
                        sql: text,
                        default_catalog: defaults.default_catalog.clone(),
                        default_namespace: NamespaceIdent::new(defaults.default_schema.clone()),
                        columns,
                        comment: clauses.comment,
                        // Trino's default is DEFINER.
                        run_as_owner: run_as_owner(clauses.security.as_deref(), session)?,
                    }),
                    ident,
                    replace: create.or_replace,
                }))
            }
            Statement::Drop {
                object_type: ObjectType::View,
                if_exists,
                names,
                cascade: false,
                ..
            } => {
                let [name] = names.as_slice() else {
                    return Err(Error::NotSupported("DROP VIEW of several views".into()));
                };
                Ok(Some(ViewChange::Drop {
                    ident: self.table_ident(state, &table_reference(name)?)?,
                    if_exists: *if_exists,
                }))
            }
            _ => Ok(None),
        }
    }

    /// Carries out a planned view change.
    pub(super) async fn change_view(&self, change: ViewChange) -> Result<()> {
        let views = self.provider.views();
        match change {
            ViewChange::Create {
                ident,
                definition,
                replace,
            } => {
                if !self.catalog().namespace_exists(ident.namespace()).await? {
                    return Err(Error::not_found(
                        ObjectKind::Schema,
                        ident.namespace().join("."),
                    ));
                }
                if self.catalog().table_exists(&ident).await? {
                    return Err(Error::already_exists(ObjectKind::Table, ident.to_string()));
                }
                views.create_view(&ident, &definition, replace).await?;
            }
            ViewChange::Drop { ident, if_exists } => {
                if !views.drop_view(&ident).await? && !if_exists {
                    return Err(Error::invalid(
                        ErrorCode::TableNotFound,
                        format!(
                            "View '{}.{}' does not exist",
                            ident.namespace().join("."),
                            ident.name()
                        ),
                    ));
                }
            }
        }
        self.refresh_names(true).await
    }

    /// Every view `statement` reads, replaced by its query (see the module documentation);
    /// how many view references it expanded.
    pub(super) async fn expand_views(
        &self,
        state: &SessionState,
        statement: &mut DFStatement,
    ) -> Result<usize> {
        let options = state.config_options();
        let defaults = Defaults {
            catalog: options.catalog.default_catalog.clone(),
            schema: options.catalog.default_schema.clone(),
        };
        match statement {
            DFStatement::Statement(statement) => {
                let targets = write_targets(statement);
                self.expand_in(statement.as_mut(), &defaults, &targets, &[])
                    .await
            }
            DFStatement::Explain(explain) => {
                Box::pin(self.expand_views(state, &mut explain.statement)).await
            }
            _ => Ok(0),
        }
    }

    /// Reads the views `node` names; `targets` are names it writes (left as they are) and
    /// `within` the views being read around it. Returns how many view references it expanded,
    /// counting those inside the views.
    fn expand_in<'a, N: VisitMut + Visit + Send>(
        &'a self,
        node: &'a mut N,
        defaults: &'a Defaults,
        targets: &'a [ObjectName],
        within: &'a [TableIdent],
    ) -> BoxFuture<'a, Result<usize>> {
        Box::pin(async move {
            let names = {
                let mut found = Relations {
                    targets,
                    depth: 0,
                    ctes: CteScope::default(),
                    names: Vec::new(),
                };
                let _ = Visit::visit(node, &mut found);
                found.names
            };
            let mut views: HashMap<ObjectName, ExpandedView> = HashMap::new();
            for name in names {
                if views.contains_key(&name) {
                    continue;
                }
                let Some((ident, view)) = self.view_named(&name, defaults).await? else {
                    continue;
                };
                if within.contains(&ident) {
                    return Err(Error::invalid(
                        ErrorCode::ViewIsRecursive,
                        format!("View is recursive: {ident}"),
                    ));
                }
                if within.len() >= MAX_VIEW_DEPTH {
                    return Err(Error::invalid(
                        ErrorCode::InvalidView,
                        format!("View {ident} reads views more than {MAX_VIEW_DEPTH} deep"),
                    ));
                }
                let mut query = view_query(&ident, &view)?;
                let view_defaults = Defaults {
                    catalog: view
                        .default_catalog
                        .clone()
                        .unwrap_or_else(|| self.settings.catalog_name.clone()),
                    schema: view.default_namespace.join("."),
                };
                qualify(&mut query, &view_defaults);
                let mut inner = within.to_vec();
                inner.push(ident.clone());
                let expansions = self
                    .expand_in(&mut query, &view_defaults, &[], &inner)
                    .await?;
                let columns = view
                    .columns
                    .as_struct()
                    .fields()
                    .iter()
                    .map(|f| f.name.clone())
                    .collect();
                views.insert(
                    name,
                    ExpandedView {
                        ident,
                        query,
                        columns,
                        expansions,
                    },
                );
            }
            if views.is_empty() {
                return Ok(0);
            }
            let mut read = ReadViews {
                targets,
                depth: 0,
                ctes: CteScope::default(),
                views: &views,
                expansions: 0,
            };
            let _ = VisitMut::visit(node, &mut read);
            if read.expansions > MAX_VIEW_EXPANSIONS {
                return Err(Error::invalid(
                    ErrorCode::InvalidView,
                    format!(
                        "the statement reads views {} times over (views reading views); at most \
                         {MAX_VIEW_EXPANSIONS} are read",
                        read.expansions
                    ),
                ));
            }
            Ok(read.expansions)
        })
    }

    /// The view `name` stands for, if it is one in SQE's Iceberg catalog.
    async fn view_named(
        &self,
        name: &ObjectName,
        defaults: &Defaults,
    ) -> Result<Option<(TableIdent, StoredView)>> {
        let Ok(reference) = object_name_to_table_reference(name.clone(), true) else {
            return Ok(None);
        };
        let resolved = reference.resolve(&defaults.catalog, &defaults.schema);
        self.stored_view(&resolved.catalog, &resolved.schema, &resolved.table)
            .await
    }

    /// The view `catalog.schema.name`, if there is one in SQE's Iceberg catalog.
    pub(super) async fn stored_view(
        &self,
        catalog: &str,
        schema: &str,
        name: &str,
    ) -> Result<Option<(TableIdent, StoredView)>> {
        if catalog != self.settings.catalog_name {
            return Ok(None);
        }
        let Some(schema) =
            datafusion::catalog::CatalogProvider::schema(self.provider.as_ref(), schema)
        else {
            return Ok(None);
        };
        let Some(schema) = schema.downcast_ref::<IcebergSchemaProvider>() else {
            return Ok(None);
        };
        Ok(schema.view(name).await?.map(|view| {
            (
                TableIdent::new(schema.namespace().clone(), name.to_string()),
                view,
            )
        }))
    }
}

/// The catalog and schema unqualified names resolve in.
struct Defaults {
    catalog: String,
    schema: String,
}

/// The view's stored SQL as a query, read as a statement would be. A query whose columns
/// include a `*` reads the stored columns by name, so a table changed under the view fails
/// the read (`COLUMN_NOT_FOUND`) instead of showing another column under a stored name.
fn view_query(ident: &TableIdent, view: &StoredView) -> Result<Query> {
    let invalid = |why: String| {
        Error::invalid(
            ErrorCode::InvalidView,
            format!("Failed analyzing stored view '{ident}': {why}"),
        )
    };
    if !view.dialect.eq_ignore_ascii_case(TRINO_DIALECT) {
        return Err(Error::NotSupported(format!(
            "view {ident} has SQL in dialect {} only; SQE reads {TRINO_DIALECT}",
            view.dialect
        )));
    }
    let as_query = |sql: &str| -> Result<(Query, Option<Vec<Label>>)> {
        let parsed = crate::dialect::parse::parse(sql).map_err(|e| invalid(e.to_string()))?;
        match parsed.statement {
            DFStatement::Statement(statement) => match *statement {
                Statement::Query(query) => Ok((*query, parsed.labels)),
                other => Err(invalid(format!("its SQL is not a query: {other}"))),
            },
            other => Err(invalid(format!("its SQL is not a query: {other}"))),
        }
    };
    let (query, labels) = as_query(&view.sql)?;
    let labels = labels.unwrap_or_default();
    if !labels.contains(&Label::Expand) || labels.contains(&Label::Position) {
        return Ok(query);
    }
    let columns: Vec<String> = view
        .columns
        .as_struct()
        .fields()
        .iter()
        .map(|f| quoting::ident(&f.name))
        .collect();
    let by_name = format!(
        "SELECT {} FROM (\n{}\n) AS {}",
        columns.join(", "),
        view.sql,
        quoting::ident(ident.name())
    );
    Ok(as_query(&by_name)?.0)
}

/// The tables a DELETE, UPDATE or MERGE changes: those names are the statement's target,
/// not views to read.
fn write_targets(statement: &Statement) -> Vec<ObjectName> {
    let name = |factor: &TableFactor| match factor {
        TableFactor::Table { name, .. } => Some(name.clone()),
        _ => None,
    };
    match statement {
        Statement::Delete(delete) => match &delete.from {
            FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables) => {
                tables.iter().filter_map(|t| name(&t.relation)).collect()
            }
        },
        Statement::Update(update) => name(&update.table.relation).into_iter().collect(),
        Statement::Merge(merge) => name(&merge.table).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Which one-part names are CTEs where a visitor is: as DataFusion plans `WITH`, a CTE is
/// seen by the CTEs after it and by its query's body, not by its own body (unless `RECURSIVE`),
/// and by every query nested in those.
#[derive(Default)]
struct CteScope {
    visible: Vec<HashSet<String>>,
    /// What each CTE body (by address) sees, set when its query is entered.
    bodies: HashMap<usize, HashSet<String>>,
}

impl CteScope {
    fn enter(&mut self, query: &Query) {
        let base = self
            .bodies
            .remove(&address(query))
            .unwrap_or_else(|| self.visible.last().cloned().unwrap_or_default());
        let mut all = base.clone();
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                let name = cte.alias.name.value.to_lowercase();
                let mut seen = all.clone();
                if with.recursive {
                    seen.insert(name.clone());
                }
                self.bodies.insert(address(&cte.query), seen);
                all.insert(name);
            }
        }
        self.visible.push(all);
    }

    fn exit(&mut self) {
        self.visible.pop();
    }

    fn hides(&self, name: &ObjectName) -> bool {
        match name.0.as_slice() {
            [ObjectNamePart::Identifier(ident)] => self
                .visible
                .last()
                .is_some_and(|names| names.contains(&ident.value.to_lowercase())),
            _ => false,
        }
    }
}

fn address(query: &Query) -> usize {
    std::ptr::from_ref(query) as usize
}

/// Whether a table factor is one the statement writes: a target name outside any query.
fn is_target(targets: &[ObjectName], depth: usize, name: &ObjectName) -> bool {
    depth == 0 && targets.contains(name)
}

/// The relations a statement reads that may be views.
struct Relations<'a> {
    targets: &'a [ObjectName],
    depth: usize,
    ctes: CteScope,
    names: Vec<ObjectName>,
}

impl Visitor for Relations<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        self.depth += 1;
        self.ctes.enter(query);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        self.ctes.exit();
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name, args: None, ..
        } = factor
            && !is_target(self.targets, self.depth, name)
            && !self.ctes.hides(name)
        {
            self.names.push(name.clone());
        }
        ControlFlow::Continue(())
    }
}

/// A view read by a statement: its query, ready to stand in its place.
struct ExpandedView {
    ident: TableIdent,
    query: Query,
    columns: Vec<String>,
    /// View references inside it.
    expansions: usize,
}

/// Puts each view's query in place of its name.
struct ReadViews<'a> {
    targets: &'a [ObjectName],
    depth: usize,
    ctes: CteScope,
    views: &'a HashMap<ObjectName, ExpandedView>,
    expansions: usize,
}

impl VisitorMut for ReadViews<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        self.ctes.enter(query);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        self.ctes.exit();
        ControlFlow::Continue(())
    }

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        if is_target(self.targets, self.depth, name) || self.ctes.hides(name) {
            return ControlFlow::Continue(());
        }
        let Some(view) = self.views.get(name) else {
            return ControlFlow::Continue(());
        };
        self.expansions = self.expansions.saturating_add(1 + view.expansions);
        if self.expansions > MAX_VIEW_EXPANSIONS {
            // Copying more would only use memory: the statement is refused.
            return ControlFlow::Break(());
        }
        let alias = match alias.take() {
            Some(alias) if !alias.columns.is_empty() => alias,
            Some(alias) => TableAlias {
                columns: alias_columns(&view.columns),
                ..alias
            },
            None => TableAlias {
                explicit: true,
                name: Ident::with_quote('"', view.ident.name()),
                columns: alias_columns(&view.columns),
                at: None,
            },
        };
        *factor = TableFactor::Derived {
            lateral: false,
            subquery: Box::new(view.query.clone()),
            alias: Some(alias),
            sample: None,
        };
        ControlFlow::Continue(())
    }
}

fn alias_columns(columns: &[String]) -> Vec<TableAliasColumnDef> {
    columns
        .iter()
        .map(|c| TableAliasColumnDef {
            name: Ident::with_quote('"', c),
            data_type: None,
        })
        .collect()
}

/// Qualifies the names of `query`'s tables (not its CTEs) with the catalog and schema its
/// view was created in, so they mean what they meant there.
fn qualify(query: &mut Query, defaults: &Defaults) {
    struct Qualify<'a> {
        defaults: &'a Defaults,
        ctes: CteScope,
    }
    impl VisitorMut for Qualify<'_> {
        type Break = ();

        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            self.ctes.enter(query);
            ControlFlow::Continue(())
        }

        fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
            self.ctes.exit();
            ControlFlow::Continue(())
        }

        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name, args: None, ..
            } = factor
                && !self.ctes.hides(name)
            {
                let part = |value: &str| ObjectNamePart::Identifier(Ident::with_quote('"', value));
                let mut parts = name.0.clone();
                if parts.len() == 1 {
                    parts.insert(0, part(&self.defaults.schema));
                }
                if parts.len() == 2 {
                    parts.insert(0, part(&self.defaults.catalog));
                }
                name.0 = parts;
            }
            ControlFlow::Continue(())
        }
    }
    let _ = VisitMut::visit(
        query,
        &mut Qualify {
            defaults,
            ctes: CteScope::default(),
        },
    );
}

/// The owner a view runs as: its creator for `SECURITY DEFINER` (Trino's default), none for
/// `INVOKER`; another mode is refused.
fn run_as_owner(security: Option<&str>, session: &SessionSettings) -> Result<Option<String>> {
    match security.map(str::to_ascii_uppercase).as_deref() {
        None | Some("DEFINER") => Ok(Some(session.user.clone())),
        Some("INVOKER") => Ok(None),
        Some(other) => Err(Error::invalid(
            ErrorCode::SyntaxError,
            format!("SECURITY {other}: a view's security is DEFINER or INVOKER"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::spec::{NestedField, PrimitiveType, Schema as IcebergSchema, Type};

    fn stored(sql: &str, dialect: &str, columns: &[&str]) -> Result<StoredView> {
        let fields = columns
            .iter()
            .enumerate()
            .map(|(i, name)| {
                NestedField::optional(i as i32 + 1, *name, Type::Primitive(PrimitiveType::Long))
                    .into()
            })
            .collect::<Vec<_>>();
        Ok(StoredView {
            sql: sql.to_string(),
            dialect: dialect.to_string(),
            default_catalog: None,
            default_namespace: NamespaceIdent::new("s".into()),
            columns: IcebergSchema::builder().with_fields(fields).build()?,
            comment: None,
            run_as_owner: None,
        })
    }

    fn ident() -> TableIdent {
        TableIdent::new(NamespaceIdent::new("s".into()), "v".into())
    }

    #[test]
    fn only_trino_sql_is_read() -> Result<()> {
        let spark = stored("SELECT a FROM t", "spark", &["a"])?;
        assert!(matches!(
            view_query(&ident(), &spark),
            Err(Error::NotSupported(_))
        ));
        Ok(())
    }

    #[test]
    fn a_star_reads_the_stored_columns_by_name() -> Result<()> {
        let star = view_query(&ident(), &stored("SELECT * FROM t", "trino", &["a", "b"])?)?;
        assert_eq!(
            star.to_string(),
            "SELECT \"a\", \"b\" FROM (SELECT * FROM t) AS \"v\""
        );
        // Named columns cannot drift: the query is read as it is.
        let named = view_query(
            &ident(),
            &stored("SELECT a, b FROM t", "trino", &["a", "b"])?,
        )?;
        assert_eq!(named.to_string(), "SELECT a, b FROM t");
        Ok(())
    }

    #[test]
    fn ctes_hide_names_only_where_they_are_seen() -> Result<()> {
        let sql = "WITH o AS (SELECT * FROM o), p AS (SELECT * FROM o) \
                   SELECT * FROM o JOIN p ON true JOIN (SELECT * FROM p) AS q ON true";
        let DFStatement::Statement(statement) = crate::dialect::parse::parse(sql)?.statement else {
            return Err(Error::Internal("not a statement".into()));
        };
        let Statement::Query(mut query) = *statement else {
            return Err(Error::Internal("not a query".into()));
        };
        qualify(
            &mut query,
            &Defaults {
                catalog: "c".into(),
                schema: "s".into(),
            },
        );
        // Only the first CTE's own `o` is a table; every other name is a CTE where it is read.
        assert_eq!(
            query.to_string(),
            "WITH o AS (SELECT * FROM \"c\".\"s\".o), p AS (SELECT * FROM o) \
             SELECT * FROM o JOIN p ON true JOIN (SELECT * FROM p) AS q ON true"
        );
        Ok(())
    }
}
