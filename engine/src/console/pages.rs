//! The HTML pages.
use super::{ConsoleEngine, Shared};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Router;
use std::sync::Arc;

pub(super) fn routes<E: ConsoleEngine>() -> Router<Arc<Shared<E>>> {
    Router::new()
}

pub(super) async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Html("<!doctype html><title>Not found</title><h1>Not found</h1>"),
    )
        .into_response()
}
