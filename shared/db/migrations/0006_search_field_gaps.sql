-- The search document with a gap between its fields.
--
-- Concatenated tsvectors continue each other's positions, so the summary's last word and the
-- event type's first were adjacent, and a quoted phrase ("timeout deploy") matched across two
-- fields that say nothing of the kind together. A placeholder lexeme between the fields takes
-- one position and is deleted again, so no phrase spans two fields; words and weights are as
-- before. '~gap~' is no lexeme the parser makes ('~gap~' in a text becomes '~gap').
--
-- This file only replaces the function (an instant under the lock); the documents already
-- stored are recomputed afterwards in short batches (migrate.rs, Step::SearchDocuments).
SET LOCAL lock_timeout = '5s';

CREATE OR REPLACE FUNCTION event_search_document(
    event_type text, entity_type text, entity_id text, tags text[], ai_summary text, structured jsonb
) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ts_delete(
        setweight(to_tsvector('english'::regconfig, coalesce(ai_summary, '')), 'A')
        || '~gap~:1'::tsvector
        || setweight(to_tsvector('english'::regconfig, translate(event_type, '._', '  ')), 'B')
        || '~gap~:1'::tsvector
        || setweight(to_tsvector('english'::regconfig, entity_type), 'B')
        || '~gap~:1'::tsvector
        || setweight(to_tsvector('english'::regconfig, entity_id), 'B')
        || '~gap~:1'::tsvector
        || setweight(to_tsvector('english'::regconfig, array_to_string(tags, ' ')), 'B')
        || '~gap~:1'::tsvector
        || setweight(to_tsvector('english'::regconfig, coalesce(event_structured_text(structured), '')), 'C'),
        '~gap~');
