//! Cancelling an instance from the console: `POST /api/instances/{id}/cancel` and
//! the instance page's form — refused without the CSRF token and in read-only
//! mode, 404 for an unknown id, 409 for an instance that has ended; the instance is
//! cancelled by the time the answer comes.

use super::*;

pub(super) async fn cancels_an_instance_through_the_api<E: ConsoleEngine>(engine: E) {
    let c = Console::new(engine.clone(), false).await;
    let id = c.start(10, None).await;
    c.until(&format!("/api/tasks?instance={id}"), |t| {
        t.as_array().unwrap().len() == 1
    })
    .await;
    let uri = format!("/api/instances/{id}/cancel");
    // Without the token, with a wrong one, read-only: refused, nothing changes.
    refused(
        &post(&c.router, &uri, None, "").await,
        StatusCode::FORBIDDEN,
        "CSRF token",
    );
    refused(
        &post(
            &c.router,
            &uri,
            Some("0123456789abcdef0123456789abcdef"),
            "",
        )
        .await,
        StatusCode::FORBIDDEN,
        "not this console's",
    );
    let ro = Console::new(engine, true).await;
    refused(&ro.post(&uri, "").await, StatusCode::FORBIDDEN, "read-only");
    let (_, still) = c.get(&format!("/api/instances/{id}")).await;
    assert_eq!(still["instance"]["status"], "running", "{still}");
    // Unknown and malformed ids.
    refused(
        &c.post("/api/instances/i999999/cancel", "").await,
        StatusCode::NOT_FOUND,
        "no instance i999999",
    );
    refused(
        &c.post("/api/instances/bogus/cancel", "").await,
        StatusCode::NOT_FOUND,
        "not an instance id",
    );
    // Cancelled, and so by the time the answer comes: its task withdrawn.
    let (status, answer) = c.post(&uri, "").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["ok"], true);
    let (_, after) = c.get(&format!("/api/instances/{id}")).await;
    assert_eq!(after["instance"]["status"], "cancelled", "{after}");
    assert_eq!(after["tasks"], json!([]), "{after}");
    // Again: it has ended.
    refused(
        &c.post(&uri, "").await,
        StatusCode::CONFLICT,
        "ended already",
    );
    let (_, listed) = c.get("/api/processes").await;
    assert_eq!(listed[0]["counts"]["cancelled"], 1, "{listed}");
}

pub(super) async fn cancels_an_instance_through_its_page<E: ConsoleEngine>(engine: E) {
    let c = Console::new(engine.clone(), false).await;
    let id = c.start(10, None).await;
    c.until(&format!("/api/tasks?instance={id}"), |t| {
        t.as_array().unwrap().len() == 1
    })
    .await;
    let app = axum::Router::new().nest("/ops", c.router.clone());
    let cancel = format!("/ops/instances/{id}/cancel");
    let (_, one) = page(&app, &format!("/ops/instances/{id}")).await;
    assert!(one.contains(&format!("action=\"{cancel}\"")), "{one}");
    assert!(one.contains("confirm("), "asks before it cancels: {one}");
    // Read-only: no button.
    let ro = Console::new(engine, true).await;
    let (_, shown) = page(&ro.router, &format!("/instances/{id}")).await;
    assert!(!shown.contains("/cancel\""), "{shown}");
    // Without the token: a 403 page, still running.
    let (status, _, body) = form(&app, &cancel, &[("back", "/")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (_, still) = c.get(&format!("/api/instances/{id}")).await;
    assert_eq!(still["instance"]["status"], "running");
    // With it: back to the instance, cancelled, the button gone.
    let back = format!("/instances/{id}");
    let (status, location, _) = form(&app, &cancel, &[("csrf", &c.token), ("back", &back)]).await;
    assert_eq!(
        (status, location.as_str()),
        (StatusCode::SEE_OTHER, format!("/ops{back}").as_str())
    );
    let (_, after) = page(&app, &format!("/ops{back}")).await;
    assert!(after.contains("status-cancelled"), "{after}");
    assert!(!after.contains(&format!("action=\"{cancel}\"")), "{after}");
    // Once more (a stale page): a 409 page.
    let (status, _, body) = form(&app, &cancel, &[("csrf", &c.token), ("back", &back)]).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("ended already"), "{body}");
}
