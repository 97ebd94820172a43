//! Views over an Iceberg [`Catalog`](iceberg::Catalog): a type that wraps another catalog and
//! changes what some calls do (observing commits, attaching credentials, racing in tests).
//!
//! The trait has no default methods, so every view would otherwise spell out the same eleven
//! pass-throughs. [`catalog_view!`](crate::catalog_view) writes those (namespaces, listing,
//! dropping, renaming); the view writes the four calls that hand back a table: `create_table`,
//! `load_table`, `register_table` and `update_table`.

/// `catalog_view!(impl<'a> Catalog for View<'a>, inner = self.inner; { <the four table calls> })`
/// implements `iceberg::Catalog` for `View`, passing everything else to `self.inner` (a
/// `&dyn Catalog`, `Arc<dyn Catalog>` or any `Catalog`). With `inner = self.inner, around =
/// self.method`, each passed call goes through `self.method(|| <the call>)`, which may make the
/// call more than once (arguments taken by value are cloned for each).
#[macro_export]
macro_rules! catalog_view {
    (impl $(<$lt:lifetime>)? Catalog for $view:ty, inner = self.$inner:ident; { $($table_calls:tt)* }) => {
        $crate::catalog_view!(
            impl $(<$lt>)? Catalog for $view, inner = self.$inner, around = self.pass_through;
            { $($table_calls)* }
        );
    };
    (impl $(<$lt:lifetime>)? Catalog for $view:ty, inner = self.$inner:ident, around = self.$around:ident; { $($table_calls:tt)* }) => {
        // In a block of its own: the import serves the generated calls only.
        const _: () = {
        #[allow(unused_imports)]
        use $crate::catalog_view::PassThrough as _;

        #[::async_trait::async_trait]
        impl $(<$lt>)? ::iceberg::Catalog for $view {
            $($table_calls)*

            async fn list_namespaces(
                &self,
                parent: Option<&::iceberg::NamespaceIdent>,
            ) -> ::iceberg::Result<Vec<::iceberg::NamespaceIdent>> {
                self.$around(|| self.$inner.list_namespaces(parent)).await
            }

            async fn create_namespace(
                &self,
                namespace: &::iceberg::NamespaceIdent,
                properties: ::std::collections::HashMap<String, String>,
            ) -> ::iceberg::Result<::iceberg::Namespace> {
                self.$around(|| self.$inner.create_namespace(namespace, properties.clone())).await
            }

            async fn get_namespace(
                &self,
                namespace: &::iceberg::NamespaceIdent,
            ) -> ::iceberg::Result<::iceberg::Namespace> {
                self.$around(|| self.$inner.get_namespace(namespace)).await
            }

            async fn namespace_exists(
                &self,
                namespace: &::iceberg::NamespaceIdent,
            ) -> ::iceberg::Result<bool> {
                self.$around(|| self.$inner.namespace_exists(namespace)).await
            }

            async fn update_namespace(
                &self,
                namespace: &::iceberg::NamespaceIdent,
                properties: ::std::collections::HashMap<String, String>,
            ) -> ::iceberg::Result<()> {
                self.$around(|| self.$inner.update_namespace(namespace, properties.clone())).await
            }

            async fn drop_namespace(
                &self,
                namespace: &::iceberg::NamespaceIdent,
            ) -> ::iceberg::Result<()> {
                self.$around(|| self.$inner.drop_namespace(namespace)).await
            }

            async fn list_tables(
                &self,
                namespace: &::iceberg::NamespaceIdent,
            ) -> ::iceberg::Result<Vec<::iceberg::TableIdent>> {
                self.$around(|| self.$inner.list_tables(namespace)).await
            }

            async fn drop_table(&self, table: &::iceberg::TableIdent) -> ::iceberg::Result<()> {
                self.$around(|| self.$inner.drop_table(table)).await
            }

            async fn purge_table(&self, table: &::iceberg::TableIdent) -> ::iceberg::Result<()> {
                self.$around(|| self.$inner.purge_table(table)).await
            }

            async fn table_exists(&self, table: &::iceberg::TableIdent) -> ::iceberg::Result<bool> {
                self.$around(|| self.$inner.table_exists(table)).await
            }

            async fn rename_table(
                &self,
                src: &::iceberg::TableIdent,
                dest: &::iceberg::TableIdent,
            ) -> ::iceberg::Result<()> {
                self.$around(|| self.$inner.rename_table(src, dest)).await
            }
        }
        };
    };
}

/// The `around` of views that only pass calls on: makes the call once.
pub trait PassThrough {
    fn pass_through<F, Fut>(&self, call: F) -> Fut
    where
        F: FnOnce() -> Fut,
    {
        call()
    }
}

impl<T: ?Sized> PassThrough for T {}
