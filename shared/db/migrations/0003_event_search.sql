-- Full-text search over what an event says (search_events, search).
--
-- This file runs in one transaction and only changes the catalog: on a table of millions of
-- rows it holds the table's ACCESS EXCLUSIVE lock for an instant, never for a rewrite.
--   * A STORED generated column would rewrite every row under that lock (reads blocked for
--     minutes), so `search` is a plain column that a trigger keeps equal to
--     event_search_document(...) on every insert and update: the same guarantee for readers,
--     added in constant time.
--   * lock_timeout: if a long reader holds the table, waiting for it would queue every later
--     query behind this ALTER; failing after 5 s (the deploy retries) is the lesser harm.
-- Rows that existed before the trigger are filled afterwards, in short batches, and the GIN
-- index is then built with CREATE INDEX CONCURRENTLY (writes never blocked): the next
-- migration step, `0004_event_search_index`, which runs outside a transaction because
-- PostgreSQL allows nothing else for a concurrent build. Every statement is idempotent.
SET LOCAL lock_timeout = '5s';

-- The tenant is the first column of the search index, so a lookup reads one tenant's
-- postings only (btree_gin lets a GIN index hold a plain text column).
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- The strings of `structured`, however deeply nested: what a person would read in it.
CREATE OR REPLACE FUNCTION event_structured_text(structured jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT string_agg(s #>> '{}', ' ')
            FROM jsonb_path_query(structured, 'strict $.** ? (@.type() == "string")') AS s);

-- The searchable document: the summary weighs most (A), then what the event is about
-- (B: type, entity, tags), then the strings of its structured fields (C). Dots and
-- underscores in type names become spaces so that `deploy` finds `deploy.finished`.
CREATE OR REPLACE FUNCTION event_search_document(
    event_type text, entity_type text, entity_id text, tags text[], ai_summary text, structured jsonb
) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN setweight(to_tsvector('english'::regconfig, coalesce(ai_summary, '')), 'A')
        || setweight(to_tsvector('english'::regconfig,
               concat_ws(' ', translate(event_type, '._', '  '), entity_type, entity_id,
                         array_to_string(tags, ' '))), 'B')
        || setweight(to_tsvector('english'::regconfig, coalesce(event_structured_text(structured), '')), 'C');

ALTER TABLE events ADD COLUMN IF NOT EXISTS search tsvector;

CREATE OR REPLACE FUNCTION events_fill_search() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.search := event_search_document(NEW.event_type, NEW.entity_type, NEW.entity_id,
                                        NEW.tags, NEW.ai_summary, NEW.structured);
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER events_fill_search
    BEFORE INSERT OR UPDATE OF event_type, entity_type, entity_id, tags, ai_summary, structured, search
    ON events FOR EACH ROW EXECUTE FUNCTION events_fill_search();

-- The ranked matches of one search, for the tenant of the calling transaction.
--
-- Why a SECURITY DEFINER function: under row-level security PostgreSQL may only use an
-- index for conditions whose operators are LEAKPROOF, and text search's `@@` is not, so
-- the search index would never be used by the endpoint's role (every search would read
-- the tenant's whole window). This function runs as the table's owner, applies the same
-- tenant condition as the policy itself (from the same setting, so an unset tenant matches
-- nothing), and returns only ids and ranks; the caller joins them back to `events` under
-- its own row-level security, so a row of another tenant could not reach it even if this
-- condition were wrong. `websearch_to_tsquery` accepts any text without a syntax error.
-- EXECUTE ... USING plans the statement for each call's values (the query's words decide
-- whether the index pays off, which a generic plan cannot know); the text is constant and
-- every value a bound parameter.
CREATE OR REPLACE FUNCTION search_event_ranks(
    query text, since timestamptz, until timestamptz, min_severity smallint,
    after_rank real, after_at timestamptz, after_id bigint, max_rows bigint
) RETURNS TABLE (id bigint, rank real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public
    AS $$
BEGIN
    RETURN QUERY EXECUTE
        'SELECT e.id, ts_rank_cd(e.search, q) '
        'FROM public.events e, websearch_to_tsquery(''english'', $1) AS q '
        'WHERE e.tenant_id = current_setting(''app.tenant_id'', true) '
        '  AND e.search @@ q '
        '  AND e.occurred_at >= $2 AND e.occurred_at < $3 AND e.severity >= $4 '
        '  AND ($5 IS NULL OR (ts_rank_cd(e.search, q), e.occurred_at, e.id) < ($5, $6, $7)) '
        'ORDER BY 2 DESC, e.occurred_at DESC, e.id DESC '
        'LIMIT least($8, 51)'
        USING query, since, until, min_severity, after_rank, after_at, after_id, max_rows;
END
$$;
REVOKE ALL ON FUNCTION search_event_ranks(text, timestamptz, timestamptz, smallint, real, timestamptz, bigint, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION search_event_ranks(text, timestamptz, timestamptz, smallint, real, timestamptz, bigint, bigint) TO mcp_reader;
GRANT EXECUTE ON FUNCTION event_structured_text(jsonb) TO mcp_reader;
