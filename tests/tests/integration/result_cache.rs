//! The result cache through the engine: hits only for the same user asking the same thing of
//! the same snapshots; every row of a VALUES list and every parameter is part of the question.

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use futures::TryStreamExt;
use sqe_engine::cache::CacheUse;
use sqe_engine::engine::{Engine, Outcome, SessionSettings, StatementTemplate};
use sqe_gateway::node::start_coordinator_on;
use sqe_tests::cluster::local_coordinator_config;

use crate::TestResult;

fn session(user: &str) -> SessionSettings {
    SessionSettings {
        user: user.into(),
        ..SessionSettings::default()
    }
}

/// Runs `sql` (with `parameters`) as `user`; its single count and what the cache did.
async fn count(
    engine: &std::sync::Arc<Engine>,
    user: &str,
    sql: &str,
    parameters: Vec<datafusion::common::ScalarValue>,
) -> Result<(i64, Option<CacheUse>), Box<dyn std::error::Error + Send + Sync>> {
    let template = engine.template(&session(user), sql).await?;
    bound_count(engine, &template, parameters).await
}

/// Binds `template` (with `parameters`) and runs it; its single count and what the cache did.
async fn bound_count(
    engine: &std::sync::Arc<Engine>,
    template: &StatementTemplate,
    parameters: Vec<datafusion::common::ScalarValue>,
) -> Result<(i64, Option<CacheUse>), Box<dyn std::error::Error + Send + Sync>> {
    let prepared = engine.bind(template, parameters).await?;
    let used = prepared.cache_use();
    let Outcome::Rows(stream) = engine.run(prepared).await? else {
        return Err("a query returns rows".into());
    };
    let batches: Vec<RecordBatch> = stream.try_collect().await?;
    let value = batches
        .first()
        .and_then(|b| b.column(0).as_primitive_opt::<Int64Type>())
        .map(|c| c.value(0))
        .ok_or("one count")?;
    Ok((value, used))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_answers_only_the_same_question() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut config = local_coordinator_config(dir.path());
    config.query_cache.enabled = true;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let coordinator = start_coordinator_on(&config, listener, None).await?;
    let engine = std::sync::Arc::clone(&coordinator.engine);
    for statement in [
        "CREATE SCHEMA demo",
        "CREATE TABLE demo.t AS SELECT value AS x FROM generate_series(1, 10)",
    ] {
        engine.execute(&session("ann"), statement).await?;
    }

    // The same query twice: a miss, then a hit with the same answer.
    let same = "SELECT count(*) FROM demo.t WHERE x > 3";
    let idle = engine.memory_reserved();
    assert_eq!(
        count(&engine, "ann", same, vec![]).await?,
        (7, Some(CacheUse::Miss))
    );
    // The entry is held in the coordinator's memory pool, beside its queries.
    assert!(
        engine.memory_reserved() > idle,
        "cached: {} bytes reserved, {idle} before",
        engine.memory_reserved()
    );
    assert_eq!(
        count(&engine, "ann", same, vec![]).await?,
        (7, Some(CacheUse::Hit))
    );
    // Another user is never served ann's entry.
    assert_eq!(
        count(&engine, "bob", same, vec![]).await?,
        (7, Some(CacheUse::Miss))
    );

    // Plans display only the first five VALUES rows: the sixth still tells them apart.
    let values = |sixth: i64| {
        format!(
            "SELECT count(*) FROM demo.t JOIN (VALUES (1), (2), (3), (4), (5), ({sixth})) v(y) ON x = y"
        )
    };
    assert_eq!(
        count(&engine, "ann", &values(6), vec![]).await?,
        (6, Some(CacheUse::Miss))
    );
    assert_eq!(
        count(&engine, "ann", &values(99), vec![]).await?,
        (5, Some(CacheUse::Miss))
    );

    // A prepared statement: each parameter value is its own question; with the integer 3 it
    // asks what the plain query above asked (`3` is an integer literal), so it shares that entry.
    let prepared = "SELECT count(*) FROM demo.t WHERE x > $1";
    let int = |v: i32| vec![datafusion::common::ScalarValue::Int32(Some(v))];
    let runs = [
        (8, 2, CacheUse::Miss),
        (8, 2, CacheUse::Hit),
        (3, 7, CacheUse::Hit),
    ];
    for (parameter, expected, used) in runs {
        assert_eq!(
            count(&engine, "ann", prepared, int(parameter)).await?,
            (expected, Some(used)),
            "x > {parameter}"
        );
    }

    // Non-deterministic: never cached.
    let clock = "SELECT count(*) FROM demo.t WHERE x > 3 AND now() IS NOT NULL";
    assert_eq!(
        count(&engine, "ann", clock, vec![]).await?.1,
        Some(CacheUse::Bypass)
    );
    assert_eq!(
        count(&engine, "ann", clock, vec![]).await?.1,
        Some(CacheUse::Bypass)
    );

    // A write to the table: the next read sees it.
    engine
        .execute(&session("ann"), "INSERT INTO demo.t VALUES (11), (12)")
        .await?;
    assert_eq!(
        count(&engine, "ann", same, vec![]).await?,
        (9, Some(CacheUse::Miss))
    );
    assert_eq!(
        count(&engine, "ann", same, vec![]).await?,
        (9, Some(CacheUse::Hit))
    );

    // A column added by another engine makes no snapshot, but the answers cached for the old
    // schema must go.
    use iceberg::transaction::{AddColumn, ApplyTransactionAction, Transaction};
    let ident = iceberg::TableIdent::new(iceberg::NamespaceIdent::new("demo".into()), "t".into());
    let table = engine.catalog().load_table(&ident).await?;
    let transaction = Transaction::new(&table);
    let transaction = transaction
        .update_schema()
        .add_column(AddColumn::optional(
            "y",
            iceberg::spec::Type::Primitive(iceberg::spec::PrimitiveType::Long),
        ))
        .apply(transaction)?;
    transaction.commit(engine.catalog().as_ref()).await?;
    assert_eq!(
        count(&engine, "ann", same, vec![]).await?,
        (9, Some(CacheUse::Miss))
    );
    coordinator.stop().await;
    Ok(())
}

/// A statement prepared once and run again later reads the table as it is then (and the
/// result cache is asked about the snapshot it reads, not the one it was prepared with).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_statement_run_later_reads_the_current_snapshot() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut config = local_coordinator_config(dir.path());
    config.query_cache.enabled = true;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let coordinator = start_coordinator_on(&config, listener, None).await?;
    let engine = std::sync::Arc::clone(&coordinator.engine);
    for statement in [
        "CREATE SCHEMA demo",
        "CREATE TABLE demo.t AS SELECT value AS x FROM generate_series(1, 10)",
    ] {
        engine.execute(&session("ann"), statement).await?;
    }
    let template = engine
        .template(&session("ann"), "SELECT count(*) FROM demo.t")
        .await?;
    let run = || bound_count(&engine, &template, vec![]);
    assert_eq!(run().await?, (10, Some(CacheUse::Miss)));

    engine
        .execute(
            &session("ann"),
            "INSERT INTO demo.t SELECT value FROM generate_series(11, 15)",
        )
        .await?;
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(run().await?, (15, Some(CacheUse::Miss)));
    assert_eq!(run().await?, (15, Some(CacheUse::Hit)));

    // A table replaced by one with other columns: an error that says so, not wrong rows.
    for statement in [
        "DROP TABLE demo.t",
        "CREATE TABLE demo.t AS SELECT 'a' AS y",
    ] {
        engine.execute(&session("ann"), statement).await?;
    }
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let error = run()
        .await
        .err()
        .ok_or("ran over other columns")?
        .to_string();
    assert!(
        error.contains("other columns than when the statement was prepared"),
        "{error}"
    );
    Ok(())
}
