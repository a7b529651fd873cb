//! [`PostgresStore`]'s task list (`user_tasks`, schema 6): the rows a checkpoint
//! writes, the listing (every node's), the claim.

use std::collections::HashMap;

use postgres::types::ToSql;
use postgres::{Row, Statement};

use super::super::sql::{Param, Sql, TaskGroups};
use super::super::{StoreError, TaskRecord};
use super::{cached, to_i64, PostgresStore};
use crate::tasklist::TaskQuery;

const COLUMNS: &str = "instance, number, process, element, name, iteration, assignee, groups, \
                       due_ms, priority, claimed_by, created_ms, key, business_key";

impl PostgresStore {
    /// `Write::Tasks`: the instance's open tasks are `open`.
    pub(super) fn put_tasks(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        instance: u64,
        open: &[TaskRecord],
    ) -> Result<(), StoreError> {
        let fail = |e| self.fail("writing the task list", e);
        let numbers: Vec<i64> = open.iter().map(|t| i64::from(t.number)).collect();
        let statement = cached(
            statements,
            tx,
            "DELETE FROM user_tasks WHERE instance = $1 AND NOT (number = ANY($2::bigint[]))",
            &self.location,
        )?;
        tx.execute(&statement, &[&to_i64(instance), &numbers])
            .map_err(fail)?;
        let statement = cached(
            statements,
            tx,
            "INSERT INTO user_tasks (instance, number, process, element, name, iteration,
               assignee, groups, due_ms, priority, claimed_by, created_ms, key, business_key)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
             ON CONFLICT (instance, number) DO NOTHING",
            &self.location,
        )?;
        for t in open {
            tx.execute(
                &statement,
                &[
                    &to_i64(t.instance),
                    &i64::from(t.number),
                    &t.process,
                    &t.element,
                    &t.name,
                    &t.iteration.map(i64::from),
                    &t.assignee,
                    &t.groups,
                    &t.due_ms,
                    &t.priority,
                    &t.claimed_by,
                    &t.created_ms,
                    &t.key,
                    &t.business_key,
                ],
            )
            .map_err(fail)?;
        }
        Ok(())
    }

    /// An instance ended: its tasks leave the list.
    pub(super) fn end_tasks(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        instance: u64,
    ) -> Result<(), StoreError> {
        let statement = cached(
            statements,
            tx,
            "DELETE FROM user_tasks WHERE instance = $1",
            &self.location,
        )?;
        tx.execute(&statement, &[&to_i64(instance)])
            .map_err(|e| self.fail("ending an instance's tasks", e))?;
        Ok(())
    }

    pub(super) fn query_tasks(&self, query: &TaskQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let sql = Sql::tasks(query, COLUMNS, |n| format!("${n}"), TaskGroups::Array);
        let rows = self.with(|inner| {
            let params: Vec<&(dyn ToSql + Sync)> = sql
                .params
                .iter()
                .map(|p| match p {
                    Param::Text(t) => t as &(dyn ToSql + Sync),
                    Param::Int(n) => n as &(dyn ToSql + Sync),
                })
                .collect();
            inner
                .client
                .query(sql.text.as_str(), &params)
                .map_err(|e| self.fail("listing tasks", e))
        })?;
        rows.iter().map(|row| self.task_record(row)).collect()
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
        let number = i64::from(number);
        let rows = self.with(|inner| {
            let fail = |e| self.fail("claiming a task", e);
            // One statement: no other claim comes between the check and the write.
            let claim = inner.statement(
                "UPDATE user_tasks SET claimed_by = $3
                 WHERE instance = $1 AND number = $2
                   AND ($3::text IS NULL OR claimed_by IS NULL OR claimed_by = $3)",
                &self.location,
            )?;
            inner
                .client
                .execute(&claim, &[&instance, &number, &user])
                .map_err(fail)?;
            let read = inner.statement(
                "SELECT instance, number, process, element, name, iteration, assignee, groups,
                        due_ms, priority, claimed_by, created_ms, key, business_key
                 FROM user_tasks WHERE instance = $1 AND number = $2",
                &self.location,
            )?;
            inner
                .client
                .query(&read, &[&instance, &number])
                .map_err(fail)
        })?;
        rows.first().map(|row| self.task_record(row)).transpose()
    }

    fn task_record(&self, row: &Row) -> Result<TaskRecord, StoreError> {
        let get = |e| self.fail("reading a task", e);
        let number: i64 = row.try_get(1).map_err(get)?;
        let iteration: Option<i64> = row.try_get(5).map_err(get)?;
        let small = |what: &str, n: i64| {
            u32::try_from(n).map_err(|_| self.corrupt(format!("a task's {what} {n}")))
        };
        Ok(TaskRecord {
            instance: self.unsigned("task instance", row.try_get(0).map_err(get)?)?,
            number: small("number", number)?,
            process: row.try_get(2).map_err(get)?,
            element: row.try_get(3).map_err(get)?,
            name: row.try_get(4).map_err(get)?,
            iteration: iteration.map(|i| small("iteration", i)).transpose()?,
            assignee: row.try_get(6).map_err(get)?,
            groups: row.try_get(7).map_err(get)?,
            due_ms: row.try_get(8).map_err(get)?,
            priority: row.try_get(9).map_err(get)?,
            claimed_by: row.try_get(10).map_err(get)?,
            created_ms: row.try_get(11).map_err(get)?,
            key: row.try_get(12).map_err(get)?,
            business_key: row.try_get(13).map_err(get)?,
        })
    }
}
