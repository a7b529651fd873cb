//! What the console answers when it cannot do what was asked: a status and a
//! message, as JSON (the API) or a page — never a panic or a trace.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::engine::{CancelError, EngineError};
use crate::query::QueryError;
use crate::retry::RetryError;
use crate::tasklist::TaskListError;

/// Why a console request failed, and the HTTP status it answers with.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Unprocessable(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The short name scripts match on.
    pub fn kind(&self) -> &'static str {
        match self {
            ApiError::NotFound(_) => "not_found",
            ApiError::BadRequest(_) => "bad_request",
            ApiError::Conflict(_) => "conflict",
            ApiError::Unprocessable(_) => "unprocessable",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::Internal(_) => "internal",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.kind(), "message": self.to_string() });
        (self.status(), axum::Json(body)).into_response()
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        let message = e.to_string();
        match e {
            EngineError::Query(QueryError::Data { .. }) => ApiError::Internal(message),
            EngineError::Query(_) | EngineError::BadBusinessKey { .. } => {
                ApiError::BadRequest(message)
            }
            EngineError::ShuttingDown => ApiError::Conflict(message),
            _ => ApiError::Internal(message),
        }
    }
}

impl From<TaskListError> for ApiError {
    fn from(e: TaskListError) -> Self {
        let message = e.to_string();
        match e {
            TaskListError::NoTask(_) => ApiError::NotFound(message),
            TaskListError::OtherProcess { .. } => ApiError::BadRequest(message),
            TaskListError::ClaimedByOther { .. }
            | TaskListError::Work(..)
            | TaskListError::NotRunning(_)
            | TaskListError::Elsewhere(..) => ApiError::Conflict(message),
            _ => ApiError::Internal(message),
        }
    }
}

impl From<RetryError> for ApiError {
    fn from(e: RetryError) -> Self {
        let message = e.to_string();
        match e {
            RetryError::NoIncident(_) => ApiError::NotFound(message),
            RetryError::WrongData(_) => ApiError::Unprocessable(message),
            RetryError::Store(..) => ApiError::Internal(message),
            _ => ApiError::Conflict(message),
        }
    }
}

impl From<CancelError> for ApiError {
    fn from(e: CancelError) -> Self {
        let message = e.to_string();
        match e {
            CancelError::NoInstance(_) => ApiError::NotFound(message),
            CancelError::OtherProcess { .. } => ApiError::BadRequest(message),
            CancelError::Store(..) => ApiError::Internal(message),
            _ => ApiError::Conflict(message),
        }
    }
}
