//! The service's OpenAPI 3.1 description, committed as
//! `scheduler/openapi.json` and served at `GET /v1/openapi.json`.
//!
//! The paths are written here; the component schemas (events, decisions, batches) are
//! generated from the wire types with schemars (JSON Schema 2020-12, which OpenAPI 3.1
//! uses), so they follow the types. `tests/api.rs` requires the committed file to equal
//! [`document`] (regenerate with `FLEETSIM_UPDATE_SCHEMAS=1`) and every route of
//! [`crate::service::router`] to be in it.

use fleetsim_policies::live::{Decision, Event};
use schemars::generate::SchemaSettings;
use serde_json::{json, Value};

use crate::service::{Batch, BatchReply, DecisionsPage};

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

fn ok_json(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// The OpenAPI document.
pub fn document() -> Value {
    let mut g = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let mut schemas = serde_json::Map::new();
    // Each adds its definition (and those it refers to) to the generator; the `$ref`s it
    // returns are the `r(...)` below.
    g.subschema_for::<Batch>();
    g.subschema_for::<BatchReply>();
    g.subschema_for::<DecisionsPage>();
    g.subschema_for::<Event>();
    g.subschema_for::<Decision>();
    for (k, v) in g.take_definitions(true) {
        schemas.insert(k, v);
    }
    schemas.insert(
        "Error".into(),
        json!({"type": "object", "required": ["error"], "properties": {"error": {"type": "string", "description": "What was wrong."}}}),
    );
    schemas.insert(
        "Health".into(),
        json!({"type": "object", "required": ["ok", "now", "decisions", "last_batch", "clock", "wal"], "properties": {
            "ok": {"type": "boolean"},
            "now": {"type": "integer", "minimum": 0, "description": "Latest accepted event time, ms."},
            "decisions": {"type": "integer", "minimum": 0, "description": "Decisions made so far (the next sequence number)."},
            "last_batch": {"type": "object", "additionalProperties": {"type": "integer"}, "description": "The last batch number accepted from each principal (by name; `local` without a tokens file). Batch numbers are each principal's own."},
            "clock": {"enum": ["event", "wall"]},
            "wal": {"type": ["object", "null"], "description": "The write-ahead log (null without one).", "properties": {
                "path": {"type": "string"},
                "records": {"type": "integer"},
                "bytes": {"type": "integer"},
                "replayed_batches": {"type": "integer", "description": "Records replayed on start (after the snapshot, when one was loaded)."},
                "snapshot_loaded": {"type": ["object", "null"], "description": "The snapshot the state was loaded from on start (null: none).", "properties": {
                    "path": {"type": "string"}, "bytes": {"type": "integer"},
                    "batches": {"type": "integer", "description": "Log records it covers."},
                    "events": {"type": "integer"}, "seconds": {"type": "number"}}},
                "snapshot_unused": {"type": ["string", "null"], "description": "Why a snapshot beside the log was not used on start (null: none was refused)."},
                "last_snapshot": {"type": ["object", "null"], "description": "The last snapshot written since start (null: none yet).", "properties": {
                    "batches": {"type": ["integer", "null"], "description": "Log records it covers (null: the write failed)."},
                    "events": {"type": "integer", "description": "Events accepted over the service's life when it was attempted."},
                    "bytes": {"type": "integer"}, "seconds": {"type": "number", "description": "Time the write took; the service answered nothing meanwhile."},
                    "error": {"type": ["string", "null"]}}},
                "tail_defect": {"type": ["object", "null"], "description": "The bad tail cut on start (null: the log was clean).", "properties": {
                    "offset": {"type": "integer"}, "file_bytes": {"type": "integer"},
                    "records_kept": {"type": "integer"}, "reason": {"type": "string"},
                    "saved_to": {"type": ["string", "null"], "description": "Where the cut bytes were saved before the truncation (null: saving failed)."}}},
                "refused_on_replay": {"type": "integer", "description": "Replayed records with a refused event: refused when first sent too under the log's own spec; under a changed --spec, a sign the replay diverged."},
                "first_refused": {"type": ["object", "null"], "description": "The first of them (null: none).", "properties": {
                    "record": {"type": "integer"}, "batch": {"type": ["integer", "null"]},
                    "index": {"type": "integer"}, "error": {"type": "string"}}},
                "segments": {"type": "integer", "description": "Segment files the log is in."},
                "segments_deleted": {"type": "integer", "description": "Segments deleted (the first emptied) since start: wholly covered by the previous snapshot for the retention."},
                "snapshot_covers": {"type": ["integer", "null"], "description": "Log records <wal>.snapshot covers."},
                "previous_snapshot_covers": {"type": ["integer", "null"], "description": "Log records <wal>.snapshot.prev covers, while its segments are kept (null after they were deleted, or when unknown)."},
                "quarantine": {"type": "object", "description": "Log records set aside (<wal>.quarantine): they did not decode, failed validation or panicked when applied; replays skip them.", "properties": {
                    "path": {"type": ["string", "null"]},
                    "records": {"type": "integer", "description": "Records the file lists."},
                    "set_aside_since_start": {"type": "integer"},
                    "first": {"type": "array", "description": "The first 10 (record index, byte offset, batch, event index, reason).", "items": {"type": "object"}},
                    "panics": {"type": "integer", "description": "Panics caught applying a batch since start."},
                    "write_error": {"type": ["string", "null"], "description": "The last error writing the file (the records are still skipped by this process)."}}}
            }},
            "ha": {"type": ["object", "null"], "description": "With `serve --ha` (null without): this replica's role and the leader.", "properties": {
                "role": {"enum": ["starting", "standby", "leader"], "description": "`starting`: reading the replicated log before its first election."},
                "leader": {"type": ["string", "null"], "description": "The leader's advertised URL, when known."},
                "etcd": {"type": "string"}, "prefix": {"type": "string"},
                "ttl_s": {"type": "integer", "description": "Lease time to live, s."},
                "elections_won": {"type": "integer", "description": "Elections this replica won since it started."}}}
        }}),
    );
    let job_names = json!({"type": "object", "properties": {
        "queue": {"type": ["string", "null"]},
        "tenant": {"type": ["string", "null"], "description": "From the tokens file's [tenants] table (null: no name for its number)."},
        "nodes": {"type": "array", "items": {"type": "string"}, "description": "Names of `nodes`, in order."}}});
    schemas.insert(
        "JobStatus".into(),
        json!({"oneOf": [
            {"type": "object", "required": ["job", "state", "nodes", "pending_reason", "names"], "properties": {
                "job": {"type": "integer", "minimum": 0},
                "state": {"enum": ["pending", "running", "evicting"]},
                "nodes": {"type": "array", "items": {"type": "integer"}, "description": "Nodes it is bound to (one per task)."},
                "pending_reason": {"type": ["string", "null"], "description": "Why it waits, as of the last pass."},
                "names": job_names}},
            {"type": "object", "required": ["job", "state", "t", "reason", "names"], "description": "A job that ended, among the last `--retain-ended-jobs` that did.", "properties": {
                "job": {"type": "integer", "minimum": 0},
                "state": {"enum": ["finished", "cancelled", "rejected"]},
                "t": {"type": "integer", "minimum": 0, "description": "When it ended, ms."},
                "reason": {"type": ["string", "null"], "description": "Why it was rejected."},
                "names": job_names}}
        ]}),
    );
    schemas.insert(
        "NodeStatus".into(),
        json!({"type": "object", "required": ["node", "name", "cell", "schedulable", "jobs"], "properties": {
            "node": {"type": "integer", "minimum": 0},
            "name": {"type": "string"},
            "cell": {"type": ["string", "null"]},
            "schedulable": {"type": "boolean", "description": "False after node_failed, node_drained or node_removed, until node_recovered or node_added."},
            "jobs": {"type": "array", "description": "Jobs bound to it. After node_failed, report the `running` ones lost (job_lost), then released (victim_released).", "items": {
                "type": "object", "required": ["job", "state"], "properties": {
                    "job": {"type": "integer"}, "state": {"enum": ["running", "evicting"]}}}}
        }}),
    );
    schemas.insert(
        "Pending".into(),
        json!({"type": "object", "required": ["jobs"], "properties": {"jobs": {"type": "array", "items": {
            "type": "object", "required": ["job", "pending_reason"], "properties": {
                "job": {"type": "integer"}, "pending_reason": {"type": "string"}}}}}}),
    );
    let from = json!({"name": "from", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 0, "default": 0}, "description": "First decision sequence number."});
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "fleetsim-scheduler",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Live scheduling service on fleetsim's policy crate: cluster events in, scheduling decisions out, in the simulator's order. Times are cluster milliseconds. Every route but /healthz needs `Authorization: Bearer <token>` when the service runs with a tokens file, and any route may answer 401, 413 or 429 from the security layer, 408 (a body not whole within the body timeout) or 503 (too many body bytes in flight; retry after 1 s). Per tenant (the tokens file's [tenants] table names the tenant numbers of job events): a tenant principal may submit jobs of its tenants and cancel their jobs, read only their jobs and pending list, and gets 403 for anything else; cluster-wide events and the decision log and stream are for admin principals. A job of another tenant and an unknown id get the same 403 body, so a tenant cannot tell which ids others use."
        },
        "paths": {
            "/v1/events": {"post": {
                "summary": "Apply a batch of events in order; logged (fsync) before it is applied and answered.",
                "requestBody": {"required": true, "content": {"application/json": {"schema": r("Batch")}}},
                "responses": {
                    "200": ok_json("The batch's decisions, in order.", r("BatchReply")),
                    "403": error_response("Event `index` is not the principal's to send: a submit for a tenant it is not listed for, into a queue its token does not list, at a priority none of its token's priority classes has, with a runtime estimate its token may not send or with progress of earlier runs; a cancel of a job that is not its tenants' (or unknown); or a cluster-wide event from a non-admin. The whole batch is refused: nothing logged or applied (body also has `index`). A tenant principal's `t`, `submit` and `seq` are set by the service."),
                    "409": error_response("Batch number at or below the last one accepted from this principal: nothing applied (a resend of a logged batch; body also has `last_batch`)."),
                    "422": error_response("Event `index` refused (body also has `index`, `applied`, `first_seq`, `decisions`). A field out of the spec's range (a queue, cell, model or node id it does not have, a shape `TaskShape` refuses, a time before the state's or the previous event's, a size over its bound; body also has `field`): nothing of the batch logged or applied, `applied` 0. An event the state refuses (an unknown job, a job not in the phase the event needs): the `applied` events before it were logged and applied, their decisions given."),
                    "500": error_response("The write-ahead log write failed, or applying the batch failed (a defect; the record was set aside in the quarantine file and the state rebuilt without it): nothing applied."),
                    "503": error_response("With `serve --ha`: this replica is not the leader (a standby, still reading the replicated log, or deposed), or etcd did not take the append: nothing applied here. Body also has `leader`, the leader's URL when known: send the batch there (a batch already in the replicated log answers 409 on any replica that has followed it).")
                }
            }},
            "/v1/decisions": {"get": {
                "summary": "Decisions from sequence number `from` (admins only: every tenant's decisions).",
                "parameters": [from, {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": crate::service::MAX_DECISIONS_LIMIT, "default": crate::service::DEFAULT_DECISIONS_LIMIT}}],
                "responses": {
                    "200": ok_json("A page of decisions.", r("DecisionsPage")),
                    "400": error_response("`limit` out of range."),
                    "403": error_response("Not an admin."),
                    "410": error_response("`from` is older than the retained window.")
                }
            }},
            "/v1/decisions/stream": {"get": {
                "summary": "Decisions from `from` on as server-sent events: `event: decision`, `id:` the sequence number, `data:` a Decision as JSON; live as new ones are made. `event: gone` then end when `from` is no longer retained. Admins only.",
                "parameters": [from],
                "responses": {
                    "200": {"description": "An event stream.", "content": {"text/event-stream": {"schema": {"type": "string"}, "itemSchema": r("Decision")}}},
                    "400": error_response("A `limit` was given."),
                    "403": error_response("Not an admin.")
                }
            }},
            "/v1/nodes/{id}": {"get": {
                "summary": "A node: its name, cell, whether it takes new work, and the jobs bound to it (admins only).",
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 0}}],
                "responses": {
                    "200": ok_json("The node.", r("NodeStatus")),
                    "403": error_response("Not an admin."),
                    "404": error_response("No such node in the fleet.")
                }
            }},
            "/metrics": {"get": {
                "summary": "Prometheus metrics (text exposition format): events and decisions by type, batches by answer, pending jobs by queue and reason, pass, request, log append and snapshot time histograms, log bytes, records and segments (open: no token needed).",
                "security": [],
                "responses": {"200": {"description": "Prometheus text format 0.0.4.", "content": {"text/plain; version=0.0.4": {"schema": {"type": "string"}}}}}
            }},
            "/v1/jobs/{id}": {"get": {
                "summary": "A job's phase, nodes and pending reason, with the names of its queue, tenant and nodes; a job that ended (finished, cancelled, rejected) stays readable among the last `--retain-ended-jobs` that did (a tenant principal: its tenants' jobs only).",
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 0}}],
                "responses": {
                    "200": ok_json("The job.", r("JobStatus")),
                    "403": error_response("A tenant principal asked for a job that is not its tenants' or does not exist (the same body either way)."),
                    "404": error_response("Unknown job (admins).")
                }
            }},
            "/v1/pending": {"get": {
                "summary": "Every pending job's reason as of the last pass; for a tenant principal, its tenants' jobs only.",
                "responses": {"200": ok_json("Pending jobs.", r("Pending"))}
            }},
            "/v1/openapi.json": {"get": {
                "summary": "This document.",
                "responses": {"200": {"description": "OpenAPI 3.1.", "content": {"application/json": {"schema": {"type": "object"}}}}}
            }},
            "/healthz": {"get": {
                "summary": "Liveness, time, decision count and the write-ahead log's state (open: no token needed).",
                "security": [],
                "responses": {"200": ok_json("Healthy.", r("Health"))}
            }}
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
        },
        "security": [{"bearer": []}]
    })
}
