//! Every statement the tools run, in one place. Each runs inside the store's read-only,
//! tenant-scoped transaction, so row-level security decides which rows exist; none takes
//! caller text other than as a bound parameter.

/// The columns of an event row, as `EventRow::read` reads them.
macro_rules! event_columns {
    () => {
        "id, entity_id, entity_type, event_type, severity, occurred_at, tags, structured, ai_summary"
    };
}

/// `query_events` (public so that the load benchmark's bare floor runs exactly this read).
/// Raw payloads leave the database only when asked for: they can be large, and a page
/// without them should not pay for reading, sending and decrypting them.
pub const QUERY_EVENTS_SQL: &str = concat!(
    "SELECT ",
    event_columns!(),
    ", CASE WHEN $11 THEN payload END AS payload \
     FROM events \
     WHERE ($1::text IS NULL OR entity_id = $1) \
       AND ($2::text[] IS NULL OR event_type = ANY($2)) \
       AND ($3::timestamptz IS NULL OR occurred_at >= $3) \
       AND ($4::timestamptz IS NULL OR occurred_at < $4) \
       AND ($5::text[] IS NULL OR tags && $5) \
       AND ($6::text[] IS NULL OR tags @> $6) \
       AND severity >= $7 \
       AND ($8::timestamptz IS NULL OR (occurred_at, id) < ($8, $9)) \
     ORDER BY occurred_at DESC, id DESC LIMIT $10"
);

/// `get_event`: one event with its payload.
pub(crate) const GET_EVENT: &str = concat!(
    "SELECT ",
    event_columns!(),
    ", payload FROM events WHERE id = $1 LIMIT 1"
);

/// `get_entity_state`: one entity's merged state.
pub(crate) const GET_ENTITY_STATE: &str = "SELECT entity_id, entity_type, state, last_event_id, updated_at \
     FROM entity_state WHERE entity_id = $1 LIMIT 1";

/// The most event types `describe_data` lists (one more is read to know there are more).
pub(crate) const MAX_EVENT_TYPES: i64 = 200;

/// `describe_data`: the catalog of event types, up to `$1` of them.
pub const EVENT_TYPES: &str =
    "SELECT name, description, field_schema FROM event_types ORDER BY name LIMIT $1";
/// Whether the rollups (migration `0007_event_rollups`) hold every event: false while the
/// migration is still counting the rows older than its triggers. Until then each statement
/// below counts from `events` through `event_window_from_events` or
/// `event_totals_from_events`, as it did before there were rollups. A one-time filter:
/// PostgreSQL evaluates it once and runs only the branch it selects; the fallbacks are
/// PL/pgSQL functions, planned only when they run.
macro_rules! rollups_ready {
    () => {
        "WITH ready AS MATERIALIZED (SELECT coalesce((SELECT done_to >= target_to FROM event_rollup_backfill), false) AS ok) "
    };
}

/// `describe_data`'s counts come from `event_totals` (tenant x entity type x event type x
/// severity, a few hundred rows), whatever the store's size.
macro_rules! totals {
    () => {
        concat!(
            rollups_ready!(),
            ", totals AS (\
                 SELECT entity_type, severity, events FROM event_totals WHERE (SELECT ok FROM ready) \
                 UNION ALL SELECT entity_type, severity, events FROM event_totals_from_events() \
                 WHERE NOT (SELECT ok FROM ready)) "
        )
    };
}

/// `describe_data`: the most common entity types.
pub const ENTITY_TYPES: &str = concat!(
    totals!(),
    "SELECT entity_type, sum(events)::bigint AS events FROM totals \
     GROUP BY entity_type HAVING sum(events) > 0 ORDER BY events DESC, entity_type LIMIT 100"
);
/// `describe_data`: events per severity.
pub const SEVERITY_COUNTS: &str = concat!(
    totals!(),
    "SELECT severity, sum(events)::bigint AS events FROM totals \
     GROUP BY severity HAVING sum(events) > 0 ORDER BY severity"
);
/// `describe_data`: the time range covered (each end one probe of `events_tenant_time`) and
/// the event count.
pub const EVENT_RANGE: &str = concat!(
    totals!(),
    "SELECT (SELECT min(occurred_at) FROM events) AS first, (SELECT max(occurred_at) FROM events) AS last, \
            (SELECT coalesce(sum(events), 0)::bigint FROM totals) AS events"
);

/// The events of a window, as rows of (`at`, `event_type`, `severity`, `events`) to be summed:
/// `$1` <= occurred_at < `$2`, optionally only the event types `$4` (`$3`, the entity, is
/// null: [`entity_parts`] counts one entity's). `$5` <= `$6` <= `$7` <= `$8` split the window
/// (`rollup::Split`): whole hours [`$6`, `$7`) come from `event_counts_hour`, whole minutes
/// [`$5`, `$6`) and [`$7`, `$8`) from `event_counts_minute`, and only the parts of a minute at
/// either end, [`$1`, `$5`) and [`$8`, `$2`), from `events`. While the rollups are being
/// backfilled the whole window comes from `events`.
macro_rules! window_parts {
    () => {
        concat!(
            rollups_ready!(),
            ", parts AS (\
                 SELECT hour AS at, event_type, severity, events FROM event_counts_hour \
                 WHERE hour >= $6 AND hour < $7 AND (SELECT ok FROM ready) \
                   AND ($4::text[] IS NULL OR event_type = ANY($4)) \
               UNION ALL SELECT minute, event_type, severity, events FROM event_counts_minute \
                 WHERE minute >= $5 AND minute < $6 AND (SELECT ok FROM ready) \
                   AND ($4::text[] IS NULL OR event_type = ANY($4)) \
               UNION ALL SELECT minute, event_type, severity, events FROM event_counts_minute \
                 WHERE minute >= $7 AND minute < $8 AND (SELECT ok FROM ready) \
                   AND ($4::text[] IS NULL OR event_type = ANY($4)) \
               UNION ALL SELECT occurred_at, event_type, severity, 1 FROM events \
                 WHERE occurred_at >= $1 AND occurred_at < $5 AND (SELECT ok FROM ready) \
                   AND ($4::text[] IS NULL OR event_type = ANY($4)) \
               UNION ALL SELECT occurred_at, event_type, severity, 1 FROM events \
                 WHERE occurred_at >= $8 AND occurred_at < $2 AND (SELECT ok FROM ready) \
                   AND ($4::text[] IS NULL OR event_type = ANY($4)) \
               UNION ALL SELECT * FROM event_window_from_events($1, $2, $3, $4) \
                 WHERE NOT (SELECT ok FROM ready)) "
        )
    };
}

/// [`window_parts`] for one entity, `$3`: whole hours [`$6`, `$7`) from
/// `entity_counts_hour`, the rest of the window (up to an hour at each end) from that
/// entity's events (`events_tenant_entity_time`). There is no minute rollup per entity, so
/// `$5` = `$6` and `$7` = `$8`.
macro_rules! entity_parts {
    () => {
        concat!(
            rollups_ready!(),
            ", parts AS (\
                 SELECT hour AS at, event_type, severity, events FROM entity_counts_hour \
                 WHERE entity_id = $3 AND hour >= $6 AND hour < $7 AND (SELECT ok FROM ready) \
                   AND ($4::text[] IS NULL OR event_type = ANY($4)) \
               UNION ALL SELECT occurred_at, event_type, severity, 1 FROM events \
                 WHERE entity_id = $3 AND occurred_at >= $1 AND occurred_at < $5 AND (SELECT ok FROM ready) \
                   AND ($4::text[] IS NULL OR event_type = ANY($4)) \
               UNION ALL SELECT occurred_at, event_type, severity, 1 FROM events \
                 WHERE entity_id = $3 AND occurred_at >= $8 AND occurred_at < $2 AND (SELECT ok FROM ready) \
                   AND ($4::text[] IS NULL OR event_type = ANY($4)) \
               UNION ALL SELECT * FROM event_window_from_events($1, $2, $3, $4) \
                 WHERE NOT (SELECT ok FROM ready)) "
        )
    };
}

/// The window `summarize_window` reads its summaries from: `$1` <= occurred_at < `$2`,
/// optionally one entity.
macro_rules! summary_scope {
    () => {
        "occurred_at >= $1 AND occurred_at < $2 AND ($3::text IS NULL OR entity_id = $3)"
    };
}

/// `summarize_window`: events per severity in the window (`window_parts`, `$4` null).
pub const WINDOW_SEVERITY_COUNTS: &str = concat!(
    window_parts!(),
    "SELECT severity, sum(events)::bigint AS events FROM parts GROUP BY severity HAVING sum(events) > 0"
);
/// [`WINDOW_SEVERITY_COUNTS`] for one entity (`entity_parts`).
pub const ENTITY_SEVERITY_COUNTS: &str = concat!(
    entity_parts!(),
    "SELECT severity, sum(events)::bigint AS events FROM parts GROUP BY severity HAVING sum(events) > 0"
);

/// `summarize_window`: the newest precomputed summaries in the window, up to `$4`.
pub const WINDOW_SUMMARIES: &str = concat!(
    "SELECT id, entity_id, event_type, severity, occurred_at, ai_summary FROM events WHERE ",
    summary_scope!(),
    " AND ai_summary IS NOT NULL ORDER BY occurred_at DESC, id DESC LIMIT $4"
);

/// `count_events`, one statement per grouping: the grouping column is chosen from this
/// fixed set, never from the caller's text. The window's events are `window_parts` (or
/// `entity_parts` for one entity); `$9` is
/// the bucket width in seconds and `$10` the most rows read. Buckets are binned from the
/// Unix epoch, so they start on UTC minute, hour and day boundaries whatever the window (two
/// calls over overlapping windows agree on shared buckets), and every rollup row (a whole
/// minute or hour) falls inside one bucket.
macro_rules! count_by {
    ($parts:ident, $key:literal) => {
        concat!(
            $parts!(),
            "SELECT date_bin($9::text::interval, at, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS start, ",
            $key,
            " AS key, sum(events)::bigint AS events FROM parts \
             GROUP BY start, key HAVING sum(events) > 0 ORDER BY start, key LIMIT $10"
        )
    };
}

pub const COUNT_ALL: &str = count_by!(window_parts, "''");
pub const COUNT_BY_EVENT_TYPE: &str = count_by!(window_parts, "event_type");
pub const COUNT_BY_SEVERITY: &str = count_by!(window_parts, "severity::text");
/// The three for one entity.
pub const ENTITY_COUNT_ALL: &str = count_by!(entity_parts, "''");
pub const ENTITY_COUNT_BY_EVENT_TYPE: &str = count_by!(entity_parts, "event_type");
pub const ENTITY_COUNT_BY_SEVERITY: &str = count_by!(entity_parts, "severity::text");

/// `search_events`: the best matches of `$1` (web-search syntax: words, "phrases", `or`,
/// `-word`) in `$2` <= occurred_at < `$3` at severity >= `$4`, by relevance then recency,
/// after the position (`$5` rank, `$6`, `$7`) of the previous page, up to `$8` rows (at
/// most 51: a page and the probe row), among the newest `$9` matches of the window.
/// `search_event_newest` (migration 0008) finds and ranks them (its `older_before` says, when
/// more events match, the `until` that searches the older ones); the rows come back through
/// this role's row-level security. Snippets (`ts_headline`, the costly part) are made for the returned rows only,
/// cut at 400 characters whatever the stored text, from every field the search document
/// holds (in its order: summary, type, entity, tags, structured text), so a hit that matched
/// only through its type, entity or tags has its match marked too. The join repeats the
/// window, which every ranked row lies in: `events` is partitioned by month, and the window
/// tells the plan which months' keys to look the ids up in (an id alone would be looked up in
/// every month).
///
/// One statement, so one round trip with its transaction: every row also says whether the
/// query was refused (`refusal`), and a refused query ranks nothing. The rule lives here
/// and only here: `no_words` when the text-search parser found no lexeme (only stop words
/// or punctuation), `only_exclusions` when what is left is a tree of `T` (only `-word`s:
/// nothing the index can look up, so every event in the window would be ranked). The
/// search is gated on the refusal by an uncorrelated subquery, which PostgreSQL runs once
/// before the search as a one-time filter: when it refuses, `search_event_newest` is never
/// called (`tests/search.rs` reads this from `EXPLAIN ANALYZE`). A refused query, and a
/// query without matches, answer one row whose hit columns are all null.
pub const SEARCH_EVENTS_SQL: &str = "WITH shape AS (\
         SELECT CASE WHEN numnode(q) = 0 THEN 'no_words' \
                     WHEN querytree(q) = 'T' THEN 'only_exclusions' END AS refusal \
         FROM websearch_to_tsquery('english', $1) AS q) \
     SELECT shape.refusal, h.id, h.entity_id, h.entity_type, h.event_type, h.severity, h.occurred_at, h.rank, h.snippet, h.older_before \
     FROM shape LEFT JOIN (\
         SELECT e.id, e.entity_id, e.entity_type, e.event_type, e.severity, e.occurred_at, r.rank, r.older_before, \
            left(ts_headline('english', \
                concat_ws(' · ', e.ai_summary, translate(e.event_type, '._', '  '), e.entity_type, \
                          e.entity_id, array_to_string(e.tags, ' '), event_structured_text(e.structured)), \
                websearch_to_tsquery('english', $1), \
                'MaxFragments=2, MaxWords=18, MinWords=6, StartSel=**, StopSel=**, FragmentDelimiter=\" … \"'), 400) AS snippet \
         FROM search_event_newest($1, $2, $3, $4, $5, $6, $7, $8, $9) AS r \
         JOIN events e ON e.id = r.id AND e.occurred_at >= $2 AND e.occurred_at < $3 \
         WHERE (SELECT refusal FROM shape) IS NULL) AS h ON true \
     ORDER BY h.rank DESC NULLS LAST, h.occurred_at DESC, h.id DESC";

/// The most values one completion reads: the 100 `completion/complete` may list, and one
/// more to tell whether there are others.
pub(crate) const COMPLETION_PROBE: i64 = 101;

/// `completion/complete` of an entity id: the tenant's entities (row-level security) whose
/// id starts with `$1`, in byte order, up to `$3`. `$2` is `$1` followed by U+10FFFF, the
/// greatest code point, so the ids that start with `$1` are the index range between the
/// two (`entity_state_completion`, in byte order whatever the database's collation); the
/// range's rows are then checked exactly. Ids over the tools' 200 characters are left out.
pub const COMPLETE_ENTITY_IDS: &str = "SELECT entity_id FROM entity_state \
     WHERE entity_id COLLATE \"C\" >= $1 AND entity_id COLLATE \"C\" < $2 \
       AND starts_with(entity_id, $1) AND length(entity_id) <= 200 \
     ORDER BY entity_id COLLATE \"C\" LIMIT $3";

/// `completion/complete` of an event type: the catalog's types that start with `$1` (as
/// for entity ids, over `event_types_completion`) of which the tenant has at least one
/// event (one probe of `events_tenant_type_time` each), up to `$3`.
pub const COMPLETE_EVENT_TYPES: &str = "SELECT t.name FROM event_types t \
     WHERE t.name COLLATE \"C\" >= $1 AND t.name COLLATE \"C\" < $2 AND starts_with(t.name, $1) \
       AND EXISTS (SELECT 1 FROM events e WHERE e.event_type = t.name) \
     ORDER BY t.name COLLATE \"C\" LIMIT $3";
