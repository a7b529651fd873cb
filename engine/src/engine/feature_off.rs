//! What a caller meets when an entry point's cargo feature is off: a method of the
//! same name whose bound no type meets, so the compiler says which feature to turn
//! on rather than that no such method exists.

/// Met by no type: `Engine::open` needs thresh's cargo feature `sqlite`.
#[diagnostic::on_unimplemented(
    message = "`Engine::open` needs thresh's cargo feature `sqlite` (the SQLite store), which is off",
    label = "needs the `sqlite` feature",
    note = "turn it on in Cargo.toml: `thresh = {{ version = \"..\", features = [\"sqlite\"] }}`"
)]
pub trait NeedsSqlite: sealed::Never {}

/// Met by no type: `Engine::connect` needs thresh's cargo feature `postgres`.
#[diagnostic::on_unimplemented(
    message = "`Engine::connect` needs thresh's cargo feature `postgres` (the PostgreSQL store), which is off",
    label = "needs the `postgres` feature",
    note = "turn it on in Cargo.toml: `thresh = {{ version = \"..\", features = [\"postgres\"] }}`"
)]
pub trait NeedsPostgres: sealed::Never {}

mod sealed {
    /// Implemented by nothing, and nobody outside can: the stubs below can never be
    /// called.
    pub trait Never {}
}

#[cfg(not(feature = "sqlite"))]
impl super::Engine {
    /// A durable engine on a SQLite file — with the cargo feature `sqlite`. Without
    /// it, this stands in so that a call says which feature to turn on.
    ///
    /// ```compile_fail,E0277
    /// # async fn run() {
    /// let engine = thresh::Engine::open("orders.db").await;
    /// # }
    /// ```
    pub async fn open<P: NeedsSqlite>(_path: P) {
        unreachable!("no type implements NeedsSqlite")
    }
}

#[cfg(not(feature = "postgres"))]
impl super::Engine {
    /// A durable engine node on PostgreSQL — with the cargo feature `postgres`.
    /// Without it, this stands in so that a call says which feature to turn on.
    ///
    /// ```compile_fail,E0277
    /// # async fn run() {
    /// let engine = thresh::Engine::connect("postgres://localhost/orders").await;
    /// # }
    /// ```
    pub async fn connect<U: NeedsPostgres>(_url: U) {
        unreachable!("no type implements NeedsPostgres")
    }
}
