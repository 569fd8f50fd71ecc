"""Tombstones keep the operator's name: erasure empties what is about the end user, not who acted on it."""

from django.db import migrations

AUDIT_GUARD = """
CREATE OR REPLACE FUNCTION memoryos_audit_guard() RETURNS trigger AS $$
DECLARE
    content_keys text[] := ARRAY['erased', 'reason', 'before', 'after', 'detail', 'actor_label', 'end_user_id'];
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF current_setting('memoryos.audit_maintenance', true) = 'on' THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'the audit trail is append-only: entry % cannot be deleted', OLD.id;
    END IF;
    -- the end user's row was deleted (ON DELETE SET NULL): nothing else may change
    IF NEW.end_user_id IS NULL AND (to_jsonb(NEW) - 'end_user_id') = (to_jsonb(OLD) - 'end_user_id') THEN
        RETURN NEW;
    END IF;
    -- erasure turns an entry into a tombstone: content emptied (the actor's label may stay), metadata untouched
    IF NEW.erased AND NOT OLD.erased
        AND (to_jsonb(NEW) - content_keys) = (to_jsonb(OLD) - content_keys)
        AND NEW.reason = '' AND NEW.before IS NULL AND NEW.after IS NULL
        AND NEW.detail = '{}'::jsonb AND (NEW.actor_label = '' OR NEW.actor_label = OLD.actor_label)
        AND (NEW.end_user_id IS NULL OR NEW.end_user_id = OLD.end_user_id) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit trail is append-only: entry % cannot be changed', OLD.id;
END;
$$ LANGUAGE plpgsql;
"""

PREVIOUS = """
CREATE OR REPLACE FUNCTION memoryos_audit_guard() RETURNS trigger AS $$
DECLARE
    content_keys text[] := ARRAY['erased', 'reason', 'before', 'after', 'detail', 'actor_label', 'end_user_id'];
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF current_setting('memoryos.audit_maintenance', true) = 'on' THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'the audit trail is append-only: entry % cannot be deleted', OLD.id;
    END IF;
    IF NEW.end_user_id IS NULL AND (to_jsonb(NEW) - 'end_user_id') = (to_jsonb(OLD) - 'end_user_id') THEN
        RETURN NEW;
    END IF;
    IF NEW.erased AND NOT OLD.erased
        AND (to_jsonb(NEW) - content_keys) = (to_jsonb(OLD) - content_keys)
        AND NEW.reason = '' AND NEW.before IS NULL AND NEW.after IS NULL
        AND NEW.detail = '{}'::jsonb AND NEW.actor_label = ''
        AND (NEW.end_user_id IS NULL OR NEW.end_user_id = OLD.end_user_id) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit trail is append-only: entry % cannot be changed', OLD.id;
END;
$$ LANGUAGE plpgsql;
"""


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_chat_api_gdpr")]

    operations = [migrations.RunSQL(AUDIT_GUARD, PREVIOUS)]
