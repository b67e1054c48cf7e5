-- The partitioned table that takes over from `events` (by month of `occurred_at`): built
-- empty beside it under a temporary name, in one short transaction that locks nothing but
-- itself. The rest of the move is `partition_events` in src/partition.rs: the existing table
-- becomes the partition `events_history` (everything before its boundary, which a CHECK
-- constraint validated beforehand proves, so attaching it reads no row), the names are
-- swapped in one short transaction, and months from the boundary on get partitions of their
-- own. Every statement is idempotent: an interrupted deploy runs this again.
--
-- Columns, their order and the constraint names are those of `events` (0001, 0003): a
-- partition must have exactly its parent's columns and CHECK constraints (matched by name),
-- and statements the endpoint prepared before the swap are re-planned against the new table
-- with the same result columns.
SET LOCAL lock_timeout = '5s';

CREATE TABLE IF NOT EXISTS events_partitioned (
    id          bigint GENERATED ALWAYS AS IDENTITY,
    tenant_id   text NOT NULL,
    entity_id   text NOT NULL,
    entity_type text NOT NULL,
    event_type  text NOT NULL,
    severity    smallint NOT NULL,
    occurred_at timestamptz NOT NULL,
    tags        text[] NOT NULL DEFAULT '{}',
    payload     jsonb NOT NULL DEFAULT '{}'::jsonb,
    structured  jsonb NOT NULL DEFAULT '{}'::jsonb,
    ai_summary  text,
    search      tsvector,
    -- A unique key of a partitioned table must hold the partition key: ids stay unique
    -- (one identity sequence), the key says so per month.
    CONSTRAINT events_partitioned_pkey PRIMARY KEY (id, occurred_at),
    CONSTRAINT events_event_type_fkey FOREIGN KEY (event_type) REFERENCES event_types (name),
    CONSTRAINT events_severity_check CHECK (severity BETWEEN 0 AND 5)
) PARTITION BY RANGE (occurred_at);

-- The indexes of `events` as they are after 0011 (the partition's own are matched to these
-- by definition when it is attached, so none is built again).
CREATE INDEX IF NOT EXISTS events_partitioned_tenant_time
    ON events_partitioned (tenant_id, occurred_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS events_partitioned_tenant_entity_time
    ON events_partitioned (tenant_id, entity_id, occurred_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS events_partitioned_tenant_type_time
    ON events_partitioned (tenant_id, event_type, occurred_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS events_partitioned_tags ON events_partitioned USING gin (tags);
CREATE INDEX IF NOT EXISTS events_partitioned_search_hour ON events_partitioned
    USING gin (tenant_id, (ARRAY[event_hour_key(tenant_id, occurred_at)]), search);

-- Row triggers of a partitioned table are cloned to every partition; statement triggers
-- fire for statements on the table itself, with transition tables holding the rows of
-- every partition they touched (an UPDATE that moves a row to another month included).
-- Writers therefore write to `events`, never to a partition directly.
CREATE OR REPLACE TRIGGER events_fill_search
    BEFORE INSERT OR UPDATE OF event_type, entity_type, entity_id, tags, ai_summary, structured, search
    ON events_partitioned FOR EACH ROW EXECUTE FUNCTION events_fill_search();
CREATE OR REPLACE TRIGGER events_rollups_insert AFTER INSERT ON events_partitioned
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION event_rollups_apply();
CREATE OR REPLACE TRIGGER events_rollups_delete AFTER DELETE ON events_partitioned
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION event_rollups_apply();
CREATE OR REPLACE TRIGGER events_rollups_update AFTER UPDATE ON events_partitioned
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION event_rollups_apply();
CREATE OR REPLACE TRIGGER events_rollups_truncate AFTER TRUNCATE ON events_partitioned
    FOR EACH STATEMENT EXECUTE FUNCTION event_rollups_truncate();

-- Row-level security as on `events` (0002). Partitions get no grant and no policy: the
-- reader role reaches rows through this table only, under this policy.
REVOKE ALL ON events_partitioned FROM PUBLIC;
GRANT SELECT ON events_partitioned TO mcp_reader;
ALTER TABLE events_partitioned ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS events_tenant ON events_partitioned;
CREATE POLICY events_tenant ON events_partitioned FOR SELECT TO mcp_reader
    USING (tenant_id = current_setting('app.tenant_id', true));

-- Partitions being retired: noted before each is detached, removed when its counts have been
-- taken out of the rollups and it is dropped (a run that stops in between is finished by
-- the next one, from the id it had counted to).
CREATE TABLE IF NOT EXISTS event_partitions_retiring (
    name       text PRIMARY KEY,
    from_at    timestamptz,
    to_at      timestamptz NOT NULL,
    -- Its events up to this id are already taken out of the totals.
    counted_to bigint NOT NULL DEFAULT 0
);
