-- Search whose cost is bounded by what it returns, not by how many events match.
--
-- `search_event_ranks` (0003) ranked every match in the window: a common word in a large
-- store meant computing ts_rank_cd for hundreds of thousands of rows, each call. This
-- function ranks only the newest `candidates` matches (the tools ask for 500): PostgreSQL
-- finds them either by walking the tenant's time index backwards and stopping at the
-- candidate count (a common word: few rows read per match) or through the search index
-- (a rare word: few matches to read at all), whichever its statistics say is cheaper for
-- the words of this call (EXECUTE plans each call with its values). Only the candidates'
-- documents are ranked. When more events match, it also answers `older_before`: the instant
-- just after the newest match it left out, the `until` that searches the older ones.
--
-- Same rules as 0003: SECURITY DEFINER so that the search index can be used under
-- row-level security (`@@` is not LEAKPROOF), the tenant condition from the same setting as
-- the policy, ids and ranks only (the caller joins them back under its own row-level
-- security), every value a bound parameter. A new name, so that the endpoint of the
-- previous release keeps working while a deploy moves from one to the other.
SET LOCAL lock_timeout = '5s';

CREATE OR REPLACE FUNCTION search_event_newest(
    query text, since timestamptz, until timestamptz, min_severity smallint,
    after_rank real, after_at timestamptz, after_id bigint, max_rows bigint, candidates bigint
) RETURNS TABLE (id bigint, rank real, older_before timestamptz)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public
    AS $$
BEGIN
    RETURN QUERY EXECUTE
        'WITH found AS MATERIALIZED ('
        '    SELECT e.id, e.occurred_at, e.search '
        '    FROM public.events e, websearch_to_tsquery(''english'', $1) AS q '
        '    WHERE e.tenant_id = current_setting(''app.tenant_id'', true) '
        '      AND e.search @@ q '
        '      AND e.occurred_at >= $2 AND e.occurred_at < $3 AND e.severity >= $4 '
        '    ORDER BY e.occurred_at DESC, e.id DESC LIMIT $9 + 1), '
        '  ranked AS ('
        '    SELECT f.id, f.occurred_at, ts_rank_cd(f.search, websearch_to_tsquery(''english'', $1)) AS rank '
        '    FROM (SELECT * FROM found ORDER BY occurred_at DESC, id DESC LIMIT $9) AS f), '
        '  beyond AS (SELECT f.occurred_at + interval ''1 microsecond'' AS before '
        '    FROM found f ORDER BY f.occurred_at, f.id LIMIT 1) '
        'SELECT r.id, r.rank, CASE WHEN (SELECT count(*) FROM found) > $9 '
        '                          THEN (SELECT before FROM beyond) END '
        'FROM ranked r '
        'WHERE $5 IS NULL OR (r.rank, r.occurred_at, r.id) < ($5, $6, $7) '
        'ORDER BY r.rank DESC, r.occurred_at DESC, r.id DESC '
        'LIMIT least($8, 51)'
        USING query, since, until, min_severity, after_rank, after_at, after_id, max_rows,
              candidates;
END
$$;
REVOKE ALL ON FUNCTION search_event_newest(text, timestamptz, timestamptz, smallint, real, timestamptz, bigint, bigint, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION search_event_newest(text, timestamptz, timestamptz, smallint, real, timestamptz, bigint, bigint, bigint) TO mcp_reader;
