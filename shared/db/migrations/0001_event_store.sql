-- The event store: a global catalog of event types, tenant-keyed events, and the current
-- merged state per entity (kept by the write path, which is not this service).

CREATE TABLE event_types (
    name         text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_.]{0,63}$'),
    description  text NOT NULL,
    -- JSON Schema of `structured` for events of this type.
    field_schema jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE TABLE events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   text NOT NULL,
    entity_id   text NOT NULL,
    entity_type text NOT NULL,
    event_type  text NOT NULL REFERENCES event_types (name),
    -- 0 debug, 1 info, 2 notice, 3 warning, 4 error, 5 critical
    severity    smallint NOT NULL CHECK (severity BETWEEN 0 AND 5),
    occurred_at timestamptz NOT NULL,
    tags        text[] NOT NULL DEFAULT '{}',
    payload     jsonb NOT NULL DEFAULT '{}'::jsonb,
    structured  jsonb NOT NULL DEFAULT '{}'::jsonb,
    ai_summary  text
);

-- Keyset pagination is newest first on (occurred_at, id); every hot query starts with the
-- tenant (row-level security adds `tenant_id = ...` to each of them).
CREATE INDEX events_tenant_time ON events (tenant_id, occurred_at DESC, id DESC);
CREATE INDEX events_tenant_entity_time ON events (tenant_id, entity_id, occurred_at DESC, id DESC);
CREATE INDEX events_tenant_type_time ON events (tenant_id, event_type, occurred_at DESC, id DESC);
CREATE INDEX events_tags ON events USING gin (tags);

CREATE TABLE entity_state (
    tenant_id     text NOT NULL,
    entity_id     text NOT NULL,
    entity_type   text NOT NULL,
    state         jsonb NOT NULL,
    last_event_id bigint REFERENCES events (id),
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, entity_id)
);
