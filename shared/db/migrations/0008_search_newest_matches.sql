-- Search whose cost is bounded by what it returns, not by how many events match.
--
-- `search_event_ranks` (0003) ranked every match in the window: a common word in a large
-- store meant reading and ranking hundreds of thousands of rows, each call. This function
-- ranks only the newest `candidates` matches (the tools ask for 500), and chooses how to
-- find them from a sample rather than from the planner's estimate (which, for words that
-- occur together, such as a quoted phrase, can be off a hundredfold):
--
--   1. It reads the newest 2,000 events of the window through the tenant's time index
--      (a couple of milliseconds) and counts how many match.
--   2. If they hold every candidate (or are the whole window), that is the answer.
--   3. Otherwise, from the share that matched and the time those 2,000 span, it estimates
--      the rows a walk back through the window would read to find the candidates and the
--      matches the search index would return for the whole window; walking reads about a
--      quarter of the cost per row (no bitmap, no sort of every match), so it walks when
--      that is cheaper, and asks the search index when the word is rare, or when the walk
--      ended without every candidate.
--
-- Only the candidates' documents are ranked. When more events match, it also answers
-- `older_before`: the instant just after the newest match it left out, the `until` that
-- searches the older ones.
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
    -- At most a page and its probe row (LIMIT least(max_rows, 51)). Said so, the caller's
    -- join back to `events` probes the primary key for each row; with the default estimate
    -- of 1,000 rows a small table was hashed whole, snippet of every row included (60 ms for
    -- 2,000 events instead of 7).
    LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 51
    SET search_path = pg_catalog, public
    AS $$
DECLARE
    q constant tsquery := websearch_to_tsquery('english', query);
    tenant constant text := current_setting('app.tenant_id', true);
    probe constant bigint := 2000;
    sampled bigint;
    matched bigint;
    oldest timestamptz;
    walk bigint;
    walked bigint;
    window_rows float8;
    ids bigint[];
BEGIN
    -- Array bounds are 32-bit.
    candidates := least(greatest(candidates, 1), 2000000000);
    SELECT count(*), count(*) FILTER (WHERE s.search @@ q), min(s.occurred_at),
           (array_agg(s.id ORDER BY s.occurred_at DESC, s.id DESC) FILTER (WHERE s.search @@ q))[1:candidates + 1]
      INTO sampled, matched, oldest, ids
      FROM (SELECT e.id, e.occurred_at, e.search FROM public.events e
            WHERE e.tenant_id = tenant AND e.occurred_at >= since AND e.occurred_at < until
              AND e.severity >= min_severity
            ORDER BY e.occurred_at DESC, e.id DESC LIMIT probe) AS s;
    IF sampled < probe OR matched > candidates THEN
        NULL;  -- the sample is the whole window, or holds every candidate
    ELSE
        ids := NULL;
        IF matched > 0 THEN
            walk := ceil((candidates + 1) * probe * 1.25 / matched);
            window_rows := sampled * extract(epoch FROM until - since)
                           / greatest(extract(epoch FROM until - oldest), 0.000001);
            IF walk < 4 * window_rows * matched / sampled THEN
                SELECT count(*),
                       (array_agg(w.id ORDER BY w.occurred_at DESC, w.id DESC) FILTER (WHERE w.search @@ q))[1:candidates + 1]
                  INTO walked, ids
                  FROM (SELECT e.id, e.occurred_at, e.search FROM public.events e
                        WHERE e.tenant_id = tenant AND e.occurred_at >= since AND e.occurred_at < until
                          AND e.severity >= min_severity
                        ORDER BY e.occurred_at DESC, e.id DESC LIMIT walk) AS w;
                IF walked = walk AND coalesce(cardinality(ids), 0) <= candidates THEN
                    ids := NULL;  -- the window goes on past the walk: not every candidate seen
                END IF;
            END IF;
        END IF;
        IF ids IS NULL THEN
            -- Planned for this call's values (EXECUTE ... USING).
            EXECUTE 'SELECT array_agg(s.id ORDER BY s.occurred_at DESC, s.id DESC) FROM ('
                    '  SELECT e.id, e.occurred_at FROM public.events e '
                    '  WHERE e.tenant_id = $1 AND e.search @@ $2 '
                    '    AND e.occurred_at >= $3 AND e.occurred_at < $4 AND e.severity >= $5 '
                    '  ORDER BY e.occurred_at DESC, e.id DESC LIMIT $6 + 1) AS s'
                INTO ids USING tenant, q, since, until, min_severity, candidates;
        END IF;
    END IF;
    RETURN QUERY EXECUTE
        'WITH found AS MATERIALIZED ('
        '    SELECT e.id, e.occurred_at, e.search FROM public.events e '
        '    WHERE e.id = ANY ($1) AND e.tenant_id = $2), '
        '  ranked AS ('
        '    SELECT f.id, f.occurred_at, ts_rank_cd(f.search, $3) AS rank '
        '    FROM (SELECT * FROM found ORDER BY occurred_at DESC, id DESC LIMIT $4) AS f), '
        '  beyond AS (SELECT f.occurred_at + interval ''1 microsecond'' AS before '
        '    FROM found f ORDER BY f.occurred_at, f.id LIMIT 1) '
        'SELECT r.id, r.rank, CASE WHEN (SELECT count(*) FROM found) > $4 '
        '                          THEN (SELECT before FROM beyond) END '
        'FROM ranked r '
        'WHERE $5 IS NULL OR (r.rank, r.occurred_at, r.id) < ($5, $6, $7) '
        'ORDER BY r.rank DESC, r.occurred_at DESC, r.id DESC '
        'LIMIT least($8, 51)'
        USING ids, tenant, q, candidates, after_rank, after_at, after_id, max_rows;
END
$$;
REVOKE ALL ON FUNCTION search_event_newest(text, timestamptz, timestamptz, smallint, real, timestamptz, bigint, bigint, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION search_event_newest(text, timestamptz, timestamptz, smallint, real, timestamptz, bigint, bigint, bigint) TO mcp_reader;
