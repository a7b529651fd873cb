//! Creating, checking and migrating a store's schema at connect.

use super::*;

/// In one transaction, under an advisory lock on the schema's name: create the schema
/// and the store, or check it (magic, schema version) and migrate it. Any error rolls
/// back: the schema is untouched. Returns whether the store was created.
pub(super) fn prepare(
    client: &mut Client,
    location: &std::path::Path,
    schema: &str,
    migrate: bool,
) -> Result<bool, StoreError> {
    let fail = |doing, e| pg_error(location, doing, e);
    let quoted = quote_ident(schema);
    let mut tx = client
        .transaction()
        .map_err(|e| fail("beginning a transaction", e))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('thresh-store:' || $1, 0))",
        &[&schema],
    )
    .map_err(|e| fail("locking the schema", e))?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {quoted}; SET LOCAL search_path TO {quoted}"
    ))
    .map_err(|e| fail("creating the schema", e))?;
    let tables: i64 = tx
        .query_one(
            "SELECT count(*) FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
            &[&schema],
        )
        .and_then(|row| row.try_get(0))
        .map_err(|e| fail("reading the schema", e))?;
    let created = tables == 0;
    let from = if created {
        0
    } else {
        let has_meta: bool = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables
                                WHERE schemaname = $1 AND tablename = 'meta')",
                &[&schema],
            )
            .and_then(|row| row.try_get(0))
            .map_err(|e| fail("reading the schema", e))?;
        let mut meta = |key: &str| -> Result<Option<String>, StoreError> {
            // Another program's `meta` may have other columns: read it as text.
            tx.query_opt("SELECT value::text FROM meta WHERE key::text = $1", &[&key])
                .and_then(|row| row.map(|r| r.try_get(0)).transpose())
                .map_err(|e| fail("reading the store's magic", e))
        };
        let magic = if has_meta {
            // A `meta` table of another shape is not ours either.
            meta("magic").ok().flatten()
        } else {
            None
        };
        if magic.as_deref() != Some(MAGIC) {
            return Err(StoreError::NotAStore {
                path: location.to_path_buf(),
            });
        }
        let version = meta("schema_version")?.ok_or_else(|| StoreError::Corrupt {
            path: location.to_path_buf(),
            detail: "the schema version is missing".into(),
        })?;
        let version: u32 = version.parse().map_err(|_| StoreError::Corrupt {
            path: location.to_path_buf(),
            detail: format!("schema version {version:?}"),
        })?;
        if version > PG_SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: location.to_path_buf(),
                found: version,
                supported: PG_SCHEMA_VERSION,
            });
        }
        version
    };
    if !migrate && (from as usize) < MIGRATIONS.len() {
        // A reconnect finds the schema older than the one it was opened at: someone
        // replaced it. Not ours to change behind the engine's back.
        return Err(StoreError::Corrupt {
            path: location.to_path_buf(),
            detail: format!("schema version {from} after reconnecting (was {PG_SCHEMA_VERSION})"),
        });
    }
    for (v, sql) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        tx.batch_execute(sql)
            .map_err(|e| fail("migrating the schema", e))?;
        tx.execute(
            "UPDATE meta SET value = $1 WHERE key = 'schema_version'",
            &[&(v + 1).to_string()],
        )
        .map_err(|e| fail("recording the schema version", e))?;
        if !created {
            info!(location = %location.display(), from = v, to = v + 1, "migrated the thresh store");
        }
    }
    if created {
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('created_ms', $1)",
            &[&now_ms().to_string()],
        )
        .map_err(|e| fail("initialising the store", e))?;
    }
    tx.commit().map_err(|e| fail("committing the schema", e))?;
    // The session's search path: every statement after this names the store's tables.
    client
        .batch_execute(&format!("SET search_path TO {quoted}"))
        .map_err(|e| fail("setting the search path", e))?;
    Ok(created)
}
