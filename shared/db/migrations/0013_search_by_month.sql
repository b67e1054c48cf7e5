-- Search on the table partitioned by month (0012): the candidates are looked up again by id
-- for ranking, and an id alone is looked up in every month's key. The lookup now also says
-- the window, which every candidate lies in, so only the window's months are read (the plan
-- is made for each call's values, so the months are chosen when it is planned). Otherwise
-- the body of 0009, unchanged: same arguments and results, so the endpoint of the previous
-- release keeps working during a deploy.
SET LOCAL lock_timeout = '5s';

CREATE OR REPLACE FUNCTION search_event_newest(
    query text, since timestamptz, until timestamptz, min_severity smallint,
    after_rank real, after_at timestamptz, after_id bigint, max_rows bigint, candidates bigint
) RETURNS TABLE (id bigint, rank real, older_before timestamptz)
    -- At most a page and its probe row (LIMIT least(max_rows, 51)): the caller's join back to
    -- `events` probes the primary key for each row.
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
    span_hours float8;
    hours float8;
    keys text[];
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
        span_hours := greatest(extract(epoch FROM until - oldest) / 3600, 1.0 / 3600);
        -- Matches expected in the window at the probe's share. None in the probe: a rare
        -- word, whose matches the index returns cheaply (and no share to size hours by), so
        -- `hours` stays NULL and the one statement below asks for the whole window.
        IF matched > 0 AND extract(epoch FROM until - since) / 3600 / span_hours * matched
           > 4 * (candidates + 1) THEN
            hours := 2 * (candidates + 1) * span_hours / matched;
        END IF;
        LOOP
            -- The keys of every hour from the one `hours` before `until` to until's own; none
            -- (the whole window) once the hours would cover it. Compared in seconds: an
            -- interval of the hours could pass the calendar's start.
            keys := CASE WHEN hours * 3600 < extract(epoch FROM until - since) THEN
                        ARRAY(SELECT event_hour_key(tenant, to_timestamp(h * 3600.0))
                              FROM generate_series(floor(extract(epoch FROM until) / 3600 - hours)::bigint,
                                                   floor(extract(epoch FROM until) / 3600)::bigint) AS h)
                    END;
            -- Planned for this call's values (EXECUTE ... USING): `$7 IS NULL` is folded to a
            -- constant, so the plan has the hours' keys as an index condition or no such
            -- condition at all.
            EXECUTE 'SELECT array_agg(s.id ORDER BY s.occurred_at DESC, s.id DESC) FROM ('
                    '  SELECT e.id, e.occurred_at FROM public.events e '
                    '  WHERE e.tenant_id = $1 AND e.search @@ $2 '
                    '    AND ($7::text[] IS NULL OR ARRAY[public.event_hour_key(e.tenant_id, e.occurred_at)] && $7) '
                    '    AND e.occurred_at >= $3 AND e.occurred_at < $4 AND e.severity >= $5 '
                    '  ORDER BY e.occurred_at DESC, e.id DESC LIMIT $6 + 1) AS s'
                INTO ids
                USING tenant, q, since, until, min_severity, candidates, keys;
            EXIT WHEN keys IS NULL OR coalesce(cardinality(ids), 0) > candidates;
            hours := hours * 4;
        END LOOP;
    END IF;
    RETURN QUERY EXECUTE
        'WITH found AS MATERIALIZED ('
        '    SELECT e.id, e.occurred_at, e.search FROM public.events e '
        '    WHERE e.id = ANY ($1) AND e.tenant_id = $2 AND e.occurred_at >= $9 AND e.occurred_at < $10), '
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
        USING ids, tenant, q, candidates, after_rank, after_at, after_id, max_rows, since, until;
END
$$;
