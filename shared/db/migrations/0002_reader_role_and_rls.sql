-- Read-only access for the endpoint, tenant isolation by row-level security.
--
-- `mcp_reader` holds the privileges: SELECT only, no BYPASSRLS, not a superuser. The login
-- role the endpoint connects as (created by the migrate step from its secret, or
-- `mcp_endpoint` locally) is a member and has default_transaction_read_only on.

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mcp_reader') THEN
        CREATE ROLE mcp_reader NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mcp_endpoint') THEN
        CREATE ROLE mcp_endpoint LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS IN ROLE mcp_reader;
    END IF;
END
$$;
ALTER ROLE mcp_endpoint SET default_transaction_read_only = on;

REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO mcp_reader;
GRANT SELECT ON event_types, events, entity_state TO mcp_reader;

-- The tenant comes from the verified token and is set per transaction with
-- set_config('app.tenant_id', <tenant>, true); unset means no rows at all.
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
CREATE POLICY events_tenant ON events FOR SELECT TO mcp_reader
    USING (tenant_id = current_setting('app.tenant_id', true));

ALTER TABLE entity_state ENABLE ROW LEVEL SECURITY;
CREATE POLICY entity_state_tenant ON entity_state FOR SELECT TO mcp_reader
    USING (tenant_id = current_setting('app.tenant_id', true));

-- The catalog is shared by all tenants.
ALTER TABLE event_types ENABLE ROW LEVEL SECURITY;
CREATE POLICY event_types_read ON event_types FOR SELECT TO mcp_reader USING (true);
