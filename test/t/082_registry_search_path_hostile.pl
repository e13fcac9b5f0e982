# A hostile search_path in the registry database (issue 41 item 2): a role
# with no more than CREATE on the registry's database makes a schema named
# after the registry's role, which the default search_path ("$user", public)
# finds first, and plants in it operators for the argument types the
# worker's statements used to multiply (numeric * integer, integer *
# interval, bigint * interval, and their neighbours), each recording in a
# table of its own that it ran, and a table of the registry's name.
#
# The worker must run none of them and write to the real table only: it pins
# its session's search_path to pg_catalog once it has found the table, every
# operator of its statements has an exact match in pg_catalog, and a table
# whose schema or owner is untrusted (neither the registry's role, the
# database's owner nor a superuser) is never used, wherever it stands in the
# path. A trigger on the real table, created by its administrator, records
# the search_path of the session that writes the row: the worker's.
#
# On the code before the fix the worker resolved snowflake_registry through
# the path (the planted table first) and its statements ran the planted
# operators on every claim and renewal.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my ($registry, $registry_conninfo) = SnowflakeTest::start_registry();

# The administrator: the registry table in public (the default path's second
# schema), a role for the nodes with least privilege, and an audit trigger.
$registry->safe_psql(
	'registry', q{
CREATE ROLE snowflake_node LOGIN;
} . SnowflakeTest::registry_table_sql() . q{
GRANT SELECT, INSERT, UPDATE ON public.snowflake_registry TO snowflake_node;
CREATE SCHEMA audit;
CREATE TABLE audit.writes (search_path text, at timestamptz DEFAULT pg_catalog.now());
GRANT USAGE ON SCHEMA audit TO snowflake_node;
GRANT INSERT ON audit.writes TO snowflake_node;
CREATE FUNCTION audit.record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit.writes (search_path) VALUES (pg_catalog.current_setting('search_path'));
    RETURN NULL;
END $$;
CREATE TRIGGER record AFTER INSERT OR UPDATE ON public.snowflake_registry
    FOR EACH ROW EXECUTE FUNCTION audit.record();
});

# The planter: CREATE on the database, nothing else.
$registry->safe_psql(
	'registry', q{
CREATE ROLE planter LOGIN;
GRANT CREATE ON DATABASE registry TO planter;
});
$registry->safe_psql(
	'registry', q{
SET ROLE planter;
CREATE SCHEMA snowflake_node;
GRANT USAGE ON SCHEMA snowflake_node TO PUBLIC;
CREATE TABLE snowflake_node.ran (what text, by_role text, at timestamptz DEFAULT pg_catalog.now());
GRANT INSERT ON snowflake_node.ran TO PUBLIC;
CREATE TABLE snowflake_node.snowflake_registry (
    datacenter_id integer, worker_id integer, system_identifier numeric(20), timeline bigint,
    host text, data_directory text, cluster_name text, claimed_at timestamptz,
    renewed_at timestamptz, expires_at timestamptz, ids_before timestamptz,
    inherited_ids_before timestamptz, token bigint DEFAULT 0, released boolean DEFAULT false,
    PRIMARY KEY (datacenter_id, worker_id));
GRANT SELECT, INSERT, UPDATE ON snowflake_node.snowflake_registry TO PUBLIC;

CREATE FUNCTION snowflake_node.mul_numeric_integer(numeric, integer) RETURNS numeric
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO snowflake_node.ran (what, by_role) VALUES ('numeric * integer', current_user);
    RAISE WARNING 'planted operator numeric * integer ran as %', current_user;
    RETURN $1 OPERATOR(pg_catalog.*) $2::numeric;
END $$;
CREATE OPERATOR snowflake_node.* (LEFTARG = numeric, RIGHTARG = integer,
    FUNCTION = snowflake_node.mul_numeric_integer);

CREATE FUNCTION snowflake_node.mul_integer_interval(integer, interval) RETURNS interval
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO snowflake_node.ran (what, by_role) VALUES ('integer * interval', current_user);
    RAISE WARNING 'planted operator integer * interval ran as %', current_user;
    RETURN $1::float8 OPERATOR(pg_catalog.*) $2;
END $$;
CREATE OPERATOR snowflake_node.* (LEFTARG = integer, RIGHTARG = interval,
    FUNCTION = snowflake_node.mul_integer_interval);

CREATE FUNCTION snowflake_node.mul_bigint_interval(bigint, interval) RETURNS interval
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO snowflake_node.ran (what, by_role) VALUES ('bigint * interval', current_user);
    RAISE WARNING 'planted operator bigint * interval ran as %', current_user;
    RETURN $1::float8 OPERATOR(pg_catalog.*) $2;
END $$;
CREATE OPERATOR snowflake_node.* (LEFTARG = bigint, RIGHTARG = interval,
    FUNCTION = snowflake_node.mul_bigint_interval);

CREATE FUNCTION snowflake_node.mul_interval_integer(interval, integer) RETURNS interval
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO snowflake_node.ran (what, by_role) VALUES ('interval * integer', current_user);
    RETURN $1 OPERATOR(pg_catalog.*) $2::float8;
END $$;
CREATE OPERATOR snowflake_node.* (LEFTARG = interval, RIGHTARG = integer,
    FUNCTION = snowflake_node.mul_interval_integer);

CREATE FUNCTION snowflake_node.mul_float8_integer(float8, integer) RETURNS float8
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO snowflake_node.ran (what, by_role) VALUES ('float8 * integer', current_user);
    RETURN $1 OPERATOR(pg_catalog.*) $2::float8;
END $$;
CREATE OPERATOR snowflake_node.* (LEFTARG = float8, RIGHTARG = integer,
    FUNCTION = snowflake_node.mul_float8_integer);

CREATE FUNCTION snowflake_node.eq_numeric_bigint(numeric, bigint) RETURNS boolean
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO snowflake_node.ran (what, by_role) VALUES ('numeric = bigint', current_user);
    RETURN $1 OPERATOR(pg_catalog.=) $2::numeric;
END $$;
CREATE OPERATOR snowflake_node.= (LEFTARG = numeric, RIGHTARG = bigint,
    FUNCTION = snowflake_node.eq_numeric_bigint);
RESET ROLE;
});

my $LEASE_MS = 3000;
my $node = SnowflakeTest::init_node(
	'node',
	datacenter_id => 1,
	worker_id => 4,
	conf => [
		"snowflake.registry = '$registry_conninfo user=snowflake_node'",
		"snowflake.registry_lease = '${LEASE_MS}ms'"
	]);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($node, "state = 'held'");
my $first =
  $registry->safe_psql('registry', 'SELECT renewed_at FROM public.snowflake_registry');

# Several renewals (one every third of the lease), and an ID or two issued.
ok( $registry->poll_query_until('registry',
		"SELECT count(*) >= 4 FROM audit.writes"),
	'the worker wrote the real table at least four times (claim and renewals)');
ok( $registry->poll_query_until('registry',
		"SELECT renewed_at > '$first'::timestamptz + interval '2 s' FROM public.snowflake_registry"),
	'the real row was renewed again and again');
my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
ok($r->{ok}, 'the node issues IDs') or diag $r->{stderr};

is( $registry->safe_psql('registry',
		"SELECT count(*) FROM public.snowflake_registry WHERE datacenter_id = 1 AND worker_id = 4"),
	'1',
	'the real table holds the node\'s row');
is($registry->safe_psql('registry', 'SELECT count(*) FROM snowflake_node.snowflake_registry'),
	'0', 'the planted table of the same name, earlier in the path, got no row');
is( $registry->safe_psql('registry',
		"SELECT coalesce(string_agg(DISTINCT what || ' as ' || by_role, ', '), 'nothing') FROM snowflake_node.ran"),
	'nothing',
	'no planted operator ran');
is( $registry->safe_psql('registry',
		"SELECT string_agg(DISTINCT search_path, ', ') FROM audit.writes"),
	'pg_catalog',
	'the worker\'s session writes the row with search_path = pg_catalog');
unlike(slurp_file($registry->logfile), qr/WARNING:  planted operator/,
	'the registry\'s log shows no planted operator\'s warning');

# The worker also finds the table again after a reconnection (a new
# connection resolves it anew) and still ignores the planted one.
my $pid = $registry->safe_psql('registry',
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'snowflake registry'");
$registry->safe_psql('registry', "SELECT pg_terminate_backend($pid)");
my $writes = $registry->safe_psql('registry', 'SELECT count(*) FROM audit.writes');
ok( $registry->poll_query_until('registry',
		"SELECT count(*) > $writes + 1 FROM audit.writes"),
	'after a reconnection the worker writes the real table again');
is($registry->safe_psql('registry', 'SELECT count(*) FROM snowflake_node.ran'),
	'0', 'no planted operator ran after the reconnection either');
is($registry->safe_psql('registry', 'SELECT count(*) FROM snowflake_node.snowflake_registry'),
	'0', 'the planted table still has no row');
is(SnowflakeTest::registry_status($node, 'state'), 'held', 'the node still holds its lease');

$node->stop('fast');
done_testing();
