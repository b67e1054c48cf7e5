-- Counts kept beside the events, so that the tools which aggregate (describe_data,
-- count_events, summarize_window) read a few thousand rollup rows instead of every event in
-- the window: their cost follows the window's length, not how many events it holds.
--
-- The endpoint never writes, and the writers are not this project, so the database keeps
-- the rollups itself: statement-level triggers with transition tables on `events` add (and
-- on delete or update, subtract) one aggregated row per group the statement touched, in the
-- writer's transaction. A reader's statement therefore sees an event and its counts
-- together or neither; there is no staleness to document. What it costs writers is measured
-- by `bench/examples/rollup_write_cost.rs` (docs/performance.md).
--
--   event_counts_minute   tenant x minute x event type x severity: the sub-hour edges of a
--                         window, and minute buckets
--   event_counts_hour     tenant x hour x event type x severity: the whole hours of a window
--   entity_counts_hour    tenant x entity x hour x event type x severity: the same for one
--                         entity (count_events and summarize_window with entity_id)
--   event_totals          tenant x entity type x event type x severity: describe_data
--
-- Only what is not a whole minute at a window's two ends is counted from `events` itself.
-- Buckets are bins from the Unix epoch (date_bin), as count_events' are, so they do not
-- depend on the session's time zone.
--
-- Rows that existed before the triggers are counted afterwards, in short batches (migrate.rs,
-- at the end of every run): `event_rollup_backfill` holds the id range still to count, which the
-- triggers leave alone so that no row is counted twice or a delete subtracted before its
-- insert was added. This file runs in one transaction and takes `events`' SHARE ROW
-- EXCLUSIVE lock (writers wait; readers do not) only for the catalog changes; every
-- statement is idempotent, so an interrupted migration runs it again safely.
SET LOCAL lock_timeout = '5s';

CREATE TABLE IF NOT EXISTS event_counts_minute (
    tenant_id  text NOT NULL,
    minute     timestamptz NOT NULL,
    event_type text NOT NULL,
    severity   smallint NOT NULL,
    events     bigint NOT NULL,
    PRIMARY KEY (tenant_id, minute, event_type, severity)
);

CREATE TABLE IF NOT EXISTS event_counts_hour (
    tenant_id  text NOT NULL,
    hour       timestamptz NOT NULL,
    event_type text NOT NULL,
    severity   smallint NOT NULL,
    events     bigint NOT NULL,
    PRIMARY KEY (tenant_id, hour, event_type, severity)
);

CREATE TABLE IF NOT EXISTS entity_counts_hour (
    tenant_id  text NOT NULL,
    entity_id  text NOT NULL,
    hour       timestamptz NOT NULL,
    event_type text NOT NULL,
    severity   smallint NOT NULL,
    events     bigint NOT NULL,
    PRIMARY KEY (tenant_id, entity_id, hour, event_type, severity)
);

CREATE TABLE IF NOT EXISTS event_totals (
    tenant_id   text NOT NULL,
    entity_type text NOT NULL,
    event_type  text NOT NULL,
    severity    smallint NOT NULL,
    events      bigint NOT NULL,
    PRIMARY KEY (tenant_id, entity_type, event_type, severity)
);

-- The ids (from, to] of rows that existed before the triggers and are not counted yet.
CREATE TABLE IF NOT EXISTS event_rollup_backfill (
    only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    done_to   bigint NOT NULL,
    target_to bigint NOT NULL
);

-- What one event adds to (sign 1) or takes from (sign -1) the counts: the counted columns
-- only, so that a statement's payloads are never copied.
DO $$
BEGIN
    IF to_regtype('event_rollup_delta') IS NULL THEN
        CREATE TYPE event_rollup_delta AS (
            tenant_id text, entity_id text, entity_type text, event_type text,
            severity smallint, occurred_at timestamptz, sign bigint);
    END IF;
END
$$;

-- Adds the deltas to every rollup. They are aggregated first and written in key order, so
-- two statements touching the same groups lock them in the same order and cannot deadlock.
-- PL/pgSQL rather than SQL: it keeps the four statements' plans for the session, where a SQL
-- function (before PostgreSQL 18) plans them again on every call, which a writer of one
-- event per statement pays each time.
-- SECURITY DEFINER (with the trigger function): writers need no privilege on the rollups,
-- and row-level security, which binds the reader role, does not apply to their owner.
CREATE OR REPLACE FUNCTION event_rollups_add(deltas event_rollup_delta[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, public
    AS $$
BEGIN
    INSERT INTO event_counts_minute AS r (tenant_id, minute, event_type, severity, events)
        SELECT d.tenant_id, date_bin('1 minute', d.occurred_at, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
               d.event_type, d.severity, sum(d.sign)
        FROM unnest(deltas) AS d GROUP BY 1, 2, 3, 4 HAVING sum(d.sign) <> 0 ORDER BY 1, 2, 3, 4
        ON CONFLICT (tenant_id, minute, event_type, severity)
        DO UPDATE SET events = r.events + excluded.events;
    INSERT INTO event_counts_hour AS r (tenant_id, hour, event_type, severity, events)
        SELECT d.tenant_id, date_bin('1 hour', d.occurred_at, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
               d.event_type, d.severity, sum(d.sign)
        FROM unnest(deltas) AS d GROUP BY 1, 2, 3, 4 HAVING sum(d.sign) <> 0 ORDER BY 1, 2, 3, 4
        ON CONFLICT (tenant_id, hour, event_type, severity)
        DO UPDATE SET events = r.events + excluded.events;
    INSERT INTO entity_counts_hour AS r (tenant_id, entity_id, hour, event_type, severity, events)
        SELECT d.tenant_id, d.entity_id,
               date_bin('1 hour', d.occurred_at, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
               d.event_type, d.severity, sum(d.sign)
        FROM unnest(deltas) AS d GROUP BY 1, 2, 3, 4, 5 HAVING sum(d.sign) <> 0 ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (tenant_id, entity_id, hour, event_type, severity)
        DO UPDATE SET events = r.events + excluded.events;
    INSERT INTO event_totals AS r (tenant_id, entity_type, event_type, severity, events)
        SELECT d.tenant_id, d.entity_type, d.event_type, d.severity, sum(d.sign)
        FROM unnest(deltas) AS d GROUP BY 1, 2, 3, 4 HAVING sum(d.sign) <> 0 ORDER BY 1, 2, 3, 4
        ON CONFLICT (tenant_id, entity_type, event_type, severity)
        DO UPDATE SET events = r.events + excluded.events;
END
$$;

-- The statement's changed rows as deltas, leaving out the ids the backfill has still to
-- count (it counts them as they are when it gets there).
CREATE OR REPLACE FUNCTION event_rollups_apply() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, public
    AS $$
DECLARE
    deltas event_rollup_delta[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(ROW(n.tenant_id, n.entity_id, n.entity_type, n.event_type, n.severity,
                             n.occurred_at, 1)::event_rollup_delta)
        INTO deltas FROM new_rows n
        WHERE NOT EXISTS (SELECT FROM event_rollup_backfill b WHERE n.id > b.done_to AND n.id <= b.target_to);
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(ROW(o.tenant_id, o.entity_id, o.entity_type, o.event_type, o.severity,
                             o.occurred_at, -1)::event_rollup_delta)
        INTO deltas FROM old_rows o
        WHERE NOT EXISTS (SELECT FROM event_rollup_backfill b WHERE o.id > b.done_to AND o.id <= b.target_to);
    ELSE
        -- Only rows whose counted columns changed (a payload or summary correction changes
        -- no count). PostgreSQL allows no column list on a trigger with transition tables, so
        -- the rows are paired by id (an identity column, which an UPDATE cannot change).
        SELECT array_agg(d) INTO deltas FROM (
            SELECT unnest(ARRAY[
                ROW(o.tenant_id, o.entity_id, o.entity_type, o.event_type, o.severity,
                    o.occurred_at, -1)::event_rollup_delta,
                ROW(n.tenant_id, n.entity_id, n.entity_type, n.event_type, n.severity,
                    n.occurred_at, 1)::event_rollup_delta]) AS d
            FROM old_rows o JOIN new_rows n ON n.id = o.id
            WHERE (o.tenant_id, o.entity_id, o.entity_type, o.event_type, o.severity, o.occurred_at)
                  IS DISTINCT FROM (n.tenant_id, n.entity_id, n.entity_type, n.event_type, n.severity, n.occurred_at)
              AND NOT EXISTS (SELECT FROM event_rollup_backfill b WHERE o.id > b.done_to AND o.id <= b.target_to)
        ) AS s;
    END IF;
    IF deltas IS NOT NULL THEN
        PERFORM event_rollups_add(deltas);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION event_rollups_truncate() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, public
    AS $$
BEGIN
    TRUNCATE event_counts_minute, event_counts_hour, entity_counts_hour, event_totals;
    UPDATE event_rollup_backfill SET done_to = target_to;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER events_rollups_insert AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION event_rollups_apply();
CREATE OR REPLACE TRIGGER events_rollups_delete AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION event_rollups_apply();
CREATE OR REPLACE TRIGGER events_rollups_update AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION event_rollups_apply();
CREATE OR REPLACE TRIGGER events_rollups_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION event_rollups_truncate();

-- Counts everything again: for an operator after writes that skipped the triggers (logical
-- replication's apply, a restore with --disable-triggers). Empties the rollups and makes
-- every row part of the backlog, which the next migrate run counts in batches; readers count
-- from `events` meanwhile. Held for an instant: writers wait for it, readers do not.
CREATE OR REPLACE FUNCTION event_rollups_reset() RETURNS bigint
    LANGUAGE plpgsql
    SET search_path = pg_catalog, public
    AS $$
BEGIN
    LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE;
    TRUNCATE event_counts_minute, event_counts_hour, entity_counts_hour, event_totals;
    UPDATE event_rollup_backfill SET done_to = 0, target_to = (SELECT coalesce(max(id), 0) FROM events);
    RETURN (SELECT target_to FROM event_rollup_backfill);
END
$$;
REVOKE ALL ON FUNCTION event_rollups_reset() FROM PUBLIC;

-- With the triggers in place (their lock waited for every writer in flight), every row up to
-- the newest id is one the triggers did not see. Kept as it is when this file runs again.
INSERT INTO event_rollup_backfill (done_to, target_to)
    SELECT 0, coalesce(max(id), 0) FROM events
    ON CONFLICT (only_row) DO NOTHING;

-- What the readers count from `events` while the backfill runs: the same rows the rollups
-- would give, for the caller's tenant under its own row-level security (SECURITY INVOKER).
-- PL/pgSQL, so that the statements that fall back on them are planned only when they run:
-- a scan of the whole window inlined into every count statement would make PostgreSQL plan
-- parallel workers and JIT compilation for a branch that, once the rollups are ready, never
-- executes (tens of milliseconds per call on a store of millions of events).
CREATE OR REPLACE FUNCTION event_window_from_events(
    since timestamptz, until timestamptz, entity text, types text[]
) RETURNS TABLE (at timestamptz, event_type text, severity smallint, events bigint)
    LANGUAGE plpgsql STABLE ROWS 1000
    SET search_path = pg_catalog, public
    AS $$
BEGIN
    -- Planned for each call's values, so that one entity's rows come from its index.
    RETURN QUERY EXECUTE
        'SELECT e.occurred_at, e.event_type, e.severity, 1::bigint FROM events e '
        'WHERE e.occurred_at >= $1 AND e.occurred_at < $2 '
        '  AND ($3::text IS NULL OR e.entity_id = $3) AND ($4::text[] IS NULL OR e.event_type = ANY ($4))'
        USING since, until, entity, types;
END
$$;

CREATE OR REPLACE FUNCTION event_totals_from_events()
    RETURNS TABLE (entity_type text, severity smallint, events bigint)
    LANGUAGE plpgsql STABLE ROWS 100
    SET search_path = pg_catalog, public
    AS $$
BEGIN
    RETURN QUERY
        SELECT e.entity_type, e.severity, count(*) FROM events e GROUP BY 1, 2;
END
$$;
GRANT EXECUTE ON FUNCTION event_window_from_events(timestamptz, timestamptz, text, text[]) TO mcp_reader;
GRANT EXECUTE ON FUNCTION event_totals_from_events() TO mcp_reader;

-- The endpoint's reads are short and bounded: JIT compilation (on by default, triggered by
-- a plan's estimated cost) would add tens of milliseconds to a statement that takes a few.
ALTER ROLE mcp_endpoint SET jit = off;

-- Readers see their tenant's counts only, as with the events themselves.
GRANT SELECT ON event_counts_minute, event_counts_hour, entity_counts_hour, event_totals TO mcp_reader;
-- Readers check that the backfill has finished before they trust the counts (until then
-- they count from `events`, as before). It holds two ids and nothing of any tenant.
GRANT SELECT ON event_rollup_backfill TO mcp_reader;
ALTER TABLE event_counts_minute ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_counts_hour ENABLE ROW LEVEL SECURITY;
ALTER TABLE entity_counts_hour ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_totals ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS event_counts_minute_tenant ON event_counts_minute;
CREATE POLICY event_counts_minute_tenant ON event_counts_minute FOR SELECT TO mcp_reader
    USING (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS event_counts_hour_tenant ON event_counts_hour;
CREATE POLICY event_counts_hour_tenant ON event_counts_hour FOR SELECT TO mcp_reader
    USING (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS entity_counts_hour_tenant ON entity_counts_hour;
CREATE POLICY entity_counts_hour_tenant ON entity_counts_hour FOR SELECT TO mcp_reader
    USING (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS event_totals_tenant ON event_totals;
CREATE POLICY event_totals_tenant ON event_totals FOR SELECT TO mcp_reader
    USING (tenant_id = current_setting('app.tenant_id', true));
REVOKE ALL ON FUNCTION event_rollups_add(event_rollup_delta[]) FROM PUBLIC;
