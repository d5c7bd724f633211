"""The rollups (0016) and ``run_health`` (0018) are written by the run's end itself
(``runs.transitions.run_end``, in the transaction that ends the run), no longer by triggers
reacting to its status: one writer of a run's end, which does each of its steps once."""

from django.db import migrations

ENDED = "('passed', 'failed', 'cancelled')"
# The health half keeps the trigger's rule: a report it cannot read never stops the run
# from ending (an EXCEPTION block is a subtransaction of its own, as the trigger's was).
DROP = """
DROP TRIGGER runs_rollup_on_end ON runs;
DROP FUNCTION amtp_rollup_run_end();
DROP TRIGGER runs_health_on_end ON runs;
DROP FUNCTION amtp_health_run_end();
CREATE FUNCTION amtp_health_runs_or_warn(ids uuid[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM amtp_health_runs(ids);
EXCEPTION WHEN others THEN
    RAISE WARNING 'run_health: runs % left out: %', ids, SQLERRM;
END $$;
"""
# Back to 0022: the triggers as 0016 and 0018 made them.
RESTORE = f"""
DROP FUNCTION amtp_health_runs_or_warn(uuid[]);
CREATE FUNCTION amtp_rollup_run_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM amtp_rollup_runs(ARRAY[NEW.run_id]);
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER runs_rollup_on_end AFTER UPDATE OF status ON runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.status NOT IN {ENDED} AND NEW.status IN {ENDED})
    EXECUTE FUNCTION amtp_rollup_run_end();
CREATE FUNCTION amtp_health_run_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM amtp_health_runs(ARRAY[NEW.run_id]);
    RETURN NULL;
EXCEPTION WHEN others THEN
    RAISE WARNING 'run_health: run % left out: %', NEW.run_id, SQLERRM;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER runs_health_on_end AFTER UPDATE OF status ON runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.status NOT IN {ENDED} AND NEW.status IN {ENDED})
    EXECUTE FUNCTION amtp_health_run_end();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0022_oidc_trust_rules"),
    ]

    operations = [
        migrations.RunSQL(DROP, RESTORE),
    ]
