//! The JSON API's OpenAPI document (`GET /api/openapi.json`, written by hand in
//! engine/src/console/openapi.json): every route the router declares is in it and
//! every operation in it is a route the router serves — read from the router's own
//! declarations (engine/src/console/api.rs) and asked of the router — and every
//! schema it refers to is defined.

use super::*;

/// The API's routes as the router declares them: each path with its methods.
fn declared_routes() -> Vec<(String, Vec<&'static str>)> {
    let source = include_str!("../../engine/src/console/api.rs");
    let body = source
        .split_once("fn routes<")
        .expect("the routes' function")
        .1;
    let body = &body[..body.find("\n}").expect("its end")];
    body.split(".route(")
        .skip(1)
        .map(|route| {
            let path = route.split('"').nth(1).expect("a quoted path").to_string();
            let methods = ["get", "post", "put", "delete", "patch"]
                .into_iter()
                .filter(|m| route.contains(&format!("{m}(")))
                .collect();
            (path, methods)
        })
        .collect()
}

/// Whether the documented path `doc` is one the route template `route` serves: a
/// `{param}` of the route takes any segment, a literal only itself.
fn serves(route: &str, doc: &str) -> bool {
    let (r, d): (Vec<&str>, Vec<&str>) = (route.split('/').collect(), doc.split('/').collect());
    r.len() == d.len()
        && r.iter()
            .zip(&d)
            .all(|(r, d)| r == d || (r.starts_with('{') && r.ends_with('}')))
}

/// The documented operations: (method, path).
fn documented(doc: &Value) -> Vec<(String, String)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("a path item").keys() {
            ops.push((method.clone(), path.clone()));
        }
    }
    ops
}

fn refs(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => found.push(r.clone()),
                    _ => refs(v, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
        _ => {}
    }
}

#[tokio::test]
async fn the_openapi_document_matches_the_routes() {
    let c = Console::new(memory(), false).await;
    let (status, doc) = c.get("/api/openapi.json").await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."), "{doc}");
    let routes = declared_routes();
    assert!(routes.len() >= 12, "the routes were read: {routes:?}");
    let ops = documented(&doc);
    // Every declared route and method is documented.
    for (route, methods) in &routes {
        for method in methods {
            assert!(
                ops.iter().any(|(m, p)| m == method && serves(route, p)),
                "{} {route} is served but not in the OpenAPI document",
                method.to_uppercase()
            );
        }
    }
    // Every documented operation is declared — and the router answers it (not its
    // fallback's 404 for a path it has no route for, nor a 405).
    for (method, path) in &ops {
        assert!(
            routes
                .iter()
                .any(|(r, ms)| ms.contains(&method.as_str()) && serves(r, path)),
            "{} {path} is documented but no route serves it",
            method.to_uppercase()
        );
        let uri = path
            .replace("{id}", "i999999")
            .replace("{instance}", "i999999")
            .replace("{number}", "1");
        let (status, answer) = match method.as_str() {
            "get" => c.get(&uri).await,
            "post" => c.post(&uri, "{}").await,
            other => panic!("a method the API does not use: {other}"),
        };
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
        assert!(
            !answer.to_string().contains("has no page"),
            "{method} {uri} fell through to the fallback: {answer}"
        );
    }
    // Every schema it refers to is defined.
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for r in found {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("a local schema: {r}"));
        assert!(
            doc["components"]["schemas"][name].is_object(),
            "{r} is not defined"
        );
    }
}
