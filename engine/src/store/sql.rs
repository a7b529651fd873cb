//! Instance queries as SQL: the one statement both SQL stores run for a
//! [`InstanceQuery`] (`Sql::select`, `Sql::count`: only the placeholders differ),
//! and for a task listing (`Sql::tasks`: the candidate-group test differs too).

use crate::query::{InstanceQuery, SortBy};

/// A parameter of a query's SQL.
#[derive(Debug)]
pub(crate) enum Param {
    Text(String),
    Int(i64),
}

/// A query as SQL for the stores' schema (SQLite v2, PostgreSQL v5): the text, with
/// placeholders made by the store's `mark` (`?1`, `$1`), and its parameters.
pub(crate) struct Sql {
    pub text: String,
    pub params: Vec<Param>,
}

impl Sql {
    /// The rows `query` selects, as `columns` of `instances i` (the waits' `w`
    /// when it filters on an element: that index drives it).
    pub fn select(query: &InstanceQuery, columns: &str, mark: fn(usize) -> String) -> Sql {
        let mut sql = Sql {
            text: String::new(),
            params: Vec::new(),
        };
        let (sort, id) = sql.filtered(query, columns, mark);
        if let Some(after) = query.after {
            let op = if query.descending { "<" } else { ">" };
            let value = sql.bind(Param::Int(after.value), mark);
            let after_id = sql.bind(
                Param::Int(i64::try_from(after.id).unwrap_or(i64::MAX)),
                mark,
            );
            sql.text += &format!(" AND ({sort}, {id}) {op} ({value}, {after_id})");
        }
        let dir = if query.descending { "DESC" } else { "ASC" };
        sql.text += &format!(" ORDER BY {sort} {dir}, {id} {dir}");
        let limit = query.limit.map_or(-1, i64::from);
        // PostgreSQL takes LIMIT NULL as no limit, SQLite a negative one.
        if query.limit.is_some() || query.offset > 0 {
            let limit = match query.limit {
                Some(_) => sql.bind(Param::Int(limit), mark),
                None => "ALL".to_string(),
            };
            let offset = sql.bind(
                Param::Int(i64::try_from(query.offset).unwrap_or(i64::MAX)),
                mark,
            );
            sql.text += &format!(" LIMIT {limit} OFFSET {offset}");
        }
        sql
    }

    /// The number of rows `query` selects (its cursor, offset and limit ignored).
    pub fn count(query: &InstanceQuery, mark: fn(usize) -> String) -> Sql {
        let mut sql = Sql {
            text: String::new(),
            params: Vec::new(),
        };
        let unpaged = InstanceQuery {
            after: None,
            ..query.clone()
        };
        sql.filtered(&unpaged, "count(*)", mark);
        sql
    }

    fn bind(&mut self, param: Param, mark: fn(usize) -> String) -> String {
        self.params.push(param);
        mark(self.params.len())
    }

    /// `SELECT columns FROM .. WHERE ..`; returns the sort and id columns.
    fn filtered(
        &mut self,
        q: &InstanceQuery,
        columns: &str,
        mark: fn(usize) -> String,
    ) -> (&'static str, &'static str) {
        let mut filters: Vec<String> = Vec::new();
        let waits = q.waiting_at.is_some();
        if let Some(node) = &q.waiting_at {
            self.text = format!(
                "SELECT {columns} FROM instance_waits w JOIN instances i ON i.id = w.instance"
            );
            filters.push(format!(
                "w.node = {}",
                self.bind(Param::Text(node.clone()), mark)
            ));
            if let Some(process) = &q.process {
                filters.push(format!(
                    "w.process = {}",
                    self.bind(Param::Text(process.clone()), mark)
                ));
            }
        } else {
            self.text = format!("SELECT {columns} FROM instances i");
            if let Some(process) = &q.process {
                filters.push(format!(
                    "i.process = {}",
                    self.bind(Param::Text(process.clone()), mark)
                ));
            }
        }
        if let Some(id) = q.id {
            // Ids are stored as SQL integers (i64); a larger one matches nothing.
            let id = i64::try_from(id).unwrap_or(-1);
            let column = if waits { "w.instance" } else { "i.id" };
            filters.push(format!("{column} = {}", self.bind(Param::Int(id), mark)));
        }
        if let Some(fingerprint) = q.fingerprint {
            // The same 64 bits, as the stores keep them.
            filters.push(format!(
                "i.fingerprint = {}",
                self.bind(Param::Int(fingerprint as i64), mark)
            ));
        }
        if !q.statuses.is_empty() {
            let marks: Vec<String> = q
                .statuses
                .iter()
                .map(|s| self.bind(Param::Text(s.as_str().to_string()), mark))
                .collect();
            filters.push(format!("i.status IN ({})", marks.join(", ")));
        }
        if let Some(key) = &q.business_key {
            filters.push(format!(
                "i.business_key = {}",
                self.bind(Param::Text(key.clone()), mark)
            ));
        }
        if let Some(key) = &q.key {
            filters.push(format!(
                "i.key = {}",
                self.bind(Param::Text(key.clone()), mark)
            ));
        }
        match q.incident {
            // Literally so: the partial index is on `incidents > 0`.
            Some(true) => filters.push("i.incidents > 0".to_string()),
            Some(false) => filters.push("i.incidents = 0".to_string()),
            None => {}
        }
        let started = if waits {
            "w.started_ms"
        } else {
            "i.started_ms"
        };
        for (column, (from, to)) in [(started, q.started), ("i.ended_ms", q.ended)] {
            if let Some(from) = from {
                filters.push(format!("{column} >= {}", self.bind(Param::Int(from), mark)));
            }
            if let Some(to) = to {
                filters.push(format!("{column} < {}", self.bind(Param::Int(to), mark)));
            }
        }
        let id = if waits { "w.instance" } else { "i.id" };
        let sort = match q.sort {
            SortBy::Id => id,
            SortBy::Started => started,
            SortBy::Ended => {
                filters.push("i.ended_ms IS NOT NULL".to_string());
                "i.ended_ms"
            }
        };
        if filters.is_empty() {
            // So a cursor's condition can always be appended with AND.
            filters.push("TRUE".to_string());
        }
        self.text += " WHERE ";
        self.text += &filters.join(" AND ");
        (sort, id)
    }
}

/// How a store's schema keeps a task's candidate groups.
pub(crate) enum TaskGroups {
    /// Rows of `user_task_groups` (SQLite).
    #[cfg(feature = "sqlite")]
    SideTable,
    /// A `text[]` column (PostgreSQL).
    #[cfg(feature = "postgres")]
    Array,
}

impl Sql {
    /// The open tasks `query` selects from `user_tasks` (SQLite schema 3 and 4,
    /// PostgreSQL 6 and 7), as `columns`, in its order and page.
    pub fn tasks(
        query: &crate::tasklist::TaskQuery,
        columns: &str,
        mark: fn(usize) -> String,
        groups: TaskGroups,
    ) -> Sql {
        use crate::tasklist::TaskOrder;
        let mut sql = Sql {
            text: format!("SELECT {columns} FROM user_tasks"),
            params: Vec::new(),
        };
        let mut clauses = Vec::new();
        for (column, value) in [
            ("process", &query.process),
            ("element", &query.element),
            ("assignee", &query.assignee),
            ("claimed_by", &query.claimed_by),
            ("key", &query.key),
            ("business_key", &query.business_key),
        ] {
            if let Some(value) = value {
                let value = sql.bind(Param::Text(value.clone()), mark);
                clauses.push(format!("{column} = {value}"));
            }
        }
        if let Some(instance) = query.instance {
            let id = i64::try_from(instance.0).unwrap_or(i64::MAX);
            clauses.push(format!("instance = {}", sql.bind(Param::Int(id), mark)));
        }
        if let Some(before) = super::due_before_ms(query) {
            clauses.push(format!("due_ms < {}", sql.bind(Param::Int(before), mark)));
        }
        if query.unassigned {
            clauses.push("assignee IS NULL AND claimed_by IS NULL".into());
        }
        if !query.groups.is_empty() {
            let marks: Vec<String> = query
                .groups
                .iter()
                .map(|g| sql.bind(Param::Text(g.clone()), mark))
                .collect();
            let list = marks.join(", ");
            clauses.push(match groups {
                #[cfg(feature = "sqlite")]
                TaskGroups::SideTable => format!(
                    "EXISTS (SELECT 1 FROM user_task_groups g WHERE g.grp IN ({list}) \
                     AND g.instance = user_tasks.instance AND g.number = user_tasks.number)"
                ),
                #[cfg(feature = "postgres")]
                TaskGroups::Array => format!("groups && ARRAY[{list}]::text[]"),
            });
        }
        if !clauses.is_empty() {
            sql.text += &format!(" WHERE {}", clauses.join(" AND "));
        }
        // No due date sorts after every date, in both dialects.
        let order = match query.order {
            TaskOrder::Priority => {
                "priority DESC, due_ms IS NULL, due_ms, created_ms, instance, number"
            }
            TaskOrder::Due => "due_ms IS NULL, due_ms, priority DESC, created_ms, instance, number",
            TaskOrder::Created => "created_ms, instance, number",
        };
        sql.text += &format!(" ORDER BY {order}");
        if query.limit.is_some() || query.offset > 0 {
            // No limit, an offset: as many as there are, in both dialects.
            let limit = query
                .limit
                .map_or(i64::MAX, |l| i64::try_from(l).unwrap_or(i64::MAX));
            let limit = sql.bind(Param::Int(limit), mark);
            let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
            let offset = sql.bind(Param::Int(offset), mark);
            sql.text += &format!(" LIMIT {limit} OFFSET {offset}");
        }
        sql
    }
}
