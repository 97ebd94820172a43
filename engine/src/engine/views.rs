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

use super::{Engine, SessionSettings, StatementKind};
use crate::catalog::{IcebergSchemaProvider, StoredView, ViewDefinition};
use crate::dialect::views::{view_options, view_query_text};
use crate::error::{Error, ErrorCode, ObjectKind, Result};

/// How deep views may read views.
const MAX_VIEW_DEPTH: usize = 32;

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

    /// Every view `statement` reads, replaced by its query (see the module documentation).
    pub(super) async fn expand_views(
        &self,
        state: &SessionState,
        statement: &mut DFStatement,
    ) -> Result<()> {
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
            _ => Ok(()),
        }
    }

    /// Reads the views `node` names; `targets` are names it writes (left as they are) and
    /// `within` the views being read around it.
    fn expand_in<'a, N: VisitMut + Visit + Send>(
        &'a self,
        node: &'a mut N,
        defaults: &'a Defaults,
        targets: &'a [ObjectName],
        within: &'a [TableIdent],
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut found = Relations {
                targets,
                depth: 0,
                names: Vec::new(),
                ctes: HashSet::new(),
            };
            let _ = Visit::visit(node, &mut found);
            let Relations { names, ctes, .. } = found;
            let mut views: HashMap<ObjectName, (TableIdent, Query, Vec<String>)> = HashMap::new();
            for name in names {
                if views.contains_key(&name) || is_cte(&name, &ctes) {
                    continue;
                }
                let Some((ident, view)) = self.view_named(&name, defaults).await? else {
                    continue;
                };
                if within.contains(&ident) {
                    return Err(Error::invalid(
                        ErrorCode::InvalidView,
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
                self.expand_in(&mut query, &view_defaults, &[], &inner)
                    .await?;
                let columns = view
                    .columns
                    .as_struct()
                    .fields()
                    .iter()
                    .map(|f| f.name.clone())
                    .collect();
                views.insert(name, (ident, query, columns));
            }
            if !views.is_empty() {
                let _ = VisitMut::visit(
                    node,
                    &mut ReadViews {
                        targets,
                        depth: 0,
                        views: &views,
                    },
                );
            }
            Ok(())
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
        if *resolved.catalog != *self.settings.catalog_name {
            return Ok(None);
        }
        let Some(schema) =
            datafusion::catalog::CatalogProvider::schema(self.provider.as_ref(), &resolved.schema)
        else {
            return Ok(None);
        };
        let Some(schema) = schema.downcast_ref::<IcebergSchemaProvider>() else {
            return Ok(None);
        };
        Ok(schema.view(&resolved.table).await?.map(|view| {
            (
                TableIdent::new(schema.namespace().clone(), resolved.table.to_string()),
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

fn table_reference(name: &ObjectName) -> Result<datafusion::sql::TableReference> {
    Ok(object_name_to_table_reference(name.clone(), true)?)
}

/// The view's stored SQL as a query, read as a statement would be.
fn view_query(ident: &TableIdent, view: &StoredView) -> Result<Query> {
    let invalid = |why: String| {
        Error::invalid(
            ErrorCode::InvalidView,
            format!("View '{ident}' is stale or in invalid state: {why}"),
        )
    };
    let parsed = crate::dialect::parse::parse(&view.sql).map_err(|e| invalid(e.to_string()))?;
    match parsed.statement {
        DFStatement::Statement(statement) => match *statement {
            Statement::Query(query) => Ok(*query),
            other => Err(invalid(format!("its SQL is not a query: {other}"))),
        },
        other => Err(invalid(format!("its SQL is not a query: {other}"))),
    }
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

fn is_cte(name: &ObjectName, ctes: &HashSet<String>) -> bool {
    match name.0.as_slice() {
        [ObjectNamePart::Identifier(ident)] => ctes.contains(&ident.value.to_lowercase()),
        _ => false,
    }
}

/// Whether a table factor is one the statement writes: a target name outside any query.
fn is_target(targets: &[ObjectName], depth: usize, name: &ObjectName) -> bool {
    depth == 0 && targets.contains(name)
}

/// The relations a statement names, and the names its CTEs define.
struct Relations<'a> {
    targets: &'a [ObjectName],
    depth: usize,
    names: Vec<ObjectName>,
    ctes: HashSet<String>,
}

impl Visitor for Relations<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        self.depth += 1;
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.ctes.insert(cte.alias.name.value.to_lowercase());
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name, args: None, ..
        } = factor
            && !is_target(self.targets, self.depth, name)
        {
            self.names.push(name.clone());
        }
        ControlFlow::Continue(())
    }
}

/// Puts each view's query in place of its name.
struct ReadViews<'a> {
    targets: &'a [ObjectName],
    depth: usize,
    views: &'a HashMap<ObjectName, (TableIdent, Query, Vec<String>)>,
}

impl VisitorMut for ReadViews<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
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
        if is_target(self.targets, self.depth, name) {
            return ControlFlow::Continue(());
        }
        let Some((ident, query, columns)) = self.views.get(name) else {
            return ControlFlow::Continue(());
        };
        let alias = match alias.take() {
            Some(alias) if !alias.columns.is_empty() => alias,
            Some(alias) => TableAlias {
                columns: alias_columns(columns),
                ..alias
            },
            None => TableAlias {
                explicit: true,
                name: Ident::with_quote('"', ident.name()),
                columns: alias_columns(columns),
                at: None,
            },
        };
        *factor = TableFactor::Derived {
            lateral: false,
            subquery: Box::new(query.clone()),
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
        ctes: HashSet<String>,
    }
    impl VisitorMut for Qualify<'_> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name, args: None, ..
            } = factor
                && !is_cte(name, &self.ctes)
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
    let mut ctes = HashSet::new();
    let _ = query.visit(&mut CteNames(&mut ctes));
    let _ = query.visit(&mut Qualify { defaults, ctes });
}

struct CteNames<'a>(&'a mut HashSet<String>);

impl VisitorMut for CteNames<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.0.insert(cte.alias.name.value.to_lowercase());
            }
        }
        ControlFlow::Continue(())
    }
}
