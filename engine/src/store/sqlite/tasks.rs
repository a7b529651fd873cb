//! [`SqliteStore`]'s task list (`user_tasks`, schema 3): the rows a checkpoint
//! writes, the listing, the claim.

use rusqlite::{params, OptionalExtension};

use super::super::sql::{Param, Sql, TaskGroups};
use super::super::{StoreError, TaskRecord};
use super::{to_i64, SqliteStore};
use crate::tasklist::TaskQuery;

const COLUMNS: &str = "instance, number, process, element, name, iteration, assignee, groups, \
                       due_ms, priority, claimed_by, created_ms, key, business_key";

impl SqliteStore {
    /// `Write::Tasks`: the instance's open tasks are `open`.
    pub(super) fn put_tasks(
        &self,
        tx: &rusqlite::Transaction<'_>,
        instance: u64,
        open: &[TaskRecord],
    ) -> Result<(), StoreError> {
        let fail = |e| self.fail("writing the task list", e);
        let numbers: Vec<i64> = open.iter().map(|t| i64::from(t.number)).collect();
        let numbers = serde_json::to_string(&numbers).unwrap_or_else(|_| "[]".into());
        for table in ["user_tasks", "user_task_groups"] {
            tx.prepare_cached(&format!(
                "DELETE FROM {table} WHERE instance = ?1
                   AND number NOT IN (SELECT value FROM json_each(?2))"
            ))
            .and_then(|mut s| s.execute(params![to_i64(instance), numbers]))
            .map_err(fail)?;
        }
        for t in open {
            let groups = serde_json::to_string(&t.groups).unwrap_or_else(|_| "[]".into());
            let added = tx
                .prepare_cached(&format!(
                    "INSERT INTO user_tasks ({COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                     ON CONFLICT (instance, number) DO NOTHING"
                ))
                .and_then(|mut s| {
                    s.execute(params![
                        to_i64(t.instance),
                        t.number,
                        t.process,
                        t.element,
                        t.name,
                        t.iteration,
                        t.assignee,
                        groups,
                        t.due_ms,
                        t.priority,
                        t.claimed_by,
                        t.created_ms,
                        t.key,
                        t.business_key
                    ])
                })
                .map_err(fail)?;
            if added == 0 {
                continue;
            }
            for group in &t.groups {
                tx.prepare_cached(
                    "INSERT INTO user_task_groups (grp, instance, number) VALUES (?1, ?2, ?3)
                     ON CONFLICT DO NOTHING",
                )
                .and_then(|mut s| s.execute(params![group, to_i64(t.instance), t.number]))
                .map_err(fail)?;
            }
        }
        Ok(())
    }

    /// An instance ended: its tasks leave the list.
    pub(super) fn end_tasks(
        &self,
        tx: &rusqlite::Transaction<'_>,
        instance: u64,
    ) -> Result<(), StoreError> {
        for table in ["user_tasks", "user_task_groups"] {
            tx.prepare_cached(&format!("DELETE FROM {table} WHERE instance = ?1"))
                .and_then(|mut s| s.execute([to_i64(instance)]))
                .map_err(|e| self.fail("ending an instance's tasks", e))?;
        }
        Ok(())
    }

    pub(super) fn query_tasks(&self, query: &TaskQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let sql = Sql::tasks(query, COLUMNS, |n| format!("?{n}"), TaskGroups::SideTable);
        let params: Vec<&dyn rusqlite::ToSql> = sql
            .params
            .iter()
            .map(|p| match p {
                Param::Text(t) => t as &dyn rusqlite::ToSql,
                Param::Int(n) => n as &dyn rusqlite::ToSql,
            })
            .collect();
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(&sql.text)
            .map_err(|e| self.fail("listing tasks", e))?;
        let rows = statement
            .query_map(params.as_slice(), task_row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.fail("listing tasks", e))?;
        rows.into_iter().map(|raw| self.task_record(raw)).collect()
    }

    pub(super) fn claim(
        &self,
        instance: u64,
        number: u32,
        user: Option<&str>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let Ok(instance) = i64::try_from(instance) else {
            return Ok(None);
        };
        let conn = self.conn();
        let fail = |e| self.fail("claiming a task", e);
        // One statement: no other claim comes between the check and the write.
        conn.prepare_cached(
            "UPDATE user_tasks SET claimed_by = ?3
             WHERE instance = ?1 AND number = ?2
               AND (?3 IS NULL OR claimed_by IS NULL OR claimed_by = ?3)",
        )
        .and_then(|mut s| s.execute(params![instance, number, user]))
        .map_err(fail)?;
        let raw = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM user_tasks WHERE instance = ?1 AND number = ?2"
            ))
            .and_then(|mut s| s.query_row(params![instance, number], task_row).optional())
            .map_err(fail)?;
        drop(conn);
        raw.map(|raw| self.task_record(raw)).transpose()
    }

    fn task_record(&self, raw: RawTask) -> Result<TaskRecord, StoreError> {
        let groups = serde_json::from_str(&raw.groups)
            .map_err(|e| self.corrupt(format!("a task's groups: {e}")))?;
        Ok(TaskRecord {
            instance: self.unsigned("task instance", raw.instance)?,
            number: raw.number,
            process: raw.process,
            element: raw.element,
            name: raw.name,
            iteration: raw.iteration,
            assignee: raw.assignee,
            groups,
            due_ms: raw.due_ms,
            priority: raw.priority,
            claimed_by: raw.claimed_by,
            created_ms: raw.created_ms,
            key: raw.key,
            business_key: raw.business_key,
        })
    }
}

struct RawTask {
    instance: i64,
    number: u32,
    process: String,
    element: String,
    name: String,
    iteration: Option<u32>,
    assignee: Option<String>,
    groups: String,
    due_ms: Option<i64>,
    priority: i32,
    claimed_by: Option<String>,
    created_ms: i64,
    key: Option<String>,
    business_key: Option<String>,
}

fn task_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawTask> {
    Ok(RawTask {
        instance: row.get(0)?,
        number: row.get(1)?,
        process: row.get(2)?,
        element: row.get(3)?,
        name: row.get(4)?,
        iteration: row.get(5)?,
        assignee: row.get(6)?,
        groups: row.get(7)?,
        due_ms: row.get(8)?,
        priority: row.get(9)?,
        claimed_by: row.get(10)?,
        created_ms: row.get(11)?,
        key: row.get(12)?,
        business_key: row.get(13)?,
    })
}
