//! `GET /v1/models`: the model this server serves — the plugin serving now, named
//! `turnstile-NAME` (its file's stem: `turnstile-rag`, `turnstile-retrieval-hybrid`). A chat
//! request must name it; after a plugin swap the list names the new one.

use axum::Json;
use axum::extract::State;

use crate::http::api::{ListObject, ModelBody, ModelListBody, ModelObject};
use crate::http::state::AppState;
use turnstile_host::Plugin;

/// The model id of `plugin`.
pub fn model_id(plugin: &Plugin) -> String {
    format!("turnstile-{}", plugin.name())
}

/// `GET /v1/models`: the models served (one: the plugin serving now).
#[utoipa::path(
    get,
    path = "/v1/models",
    tag = "openai",
    responses((status = 200, description = "The model served", body = ModelListBody))
)]
pub async fn models(State(state): State<AppState>) -> Json<ModelListBody> {
    let generation = state.plugins.current();
    Json(ModelListBody {
        object: ListObject::List,
        data: vec![ModelBody {
            id: model_id(&generation.plugin),
            object: ModelObject::Model,
            created: state.started_unix(),
            owned_by: "turnstile".to_owned(),
        }],
    })
}
