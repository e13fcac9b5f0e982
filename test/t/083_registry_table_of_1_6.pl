# A registry table made by snowflake 1.6 or earlier (issue 37): it lacks the
# columns token (the holder's postmaster) and released (given back at a clean
# shutdown) that the claim of 1.7 needs. The worker adds them when its role
# owns the table; otherwise it claims nothing and its status says what the
# table's owner must run, which then lets it claim.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my ($registry, $conninfo) = SnowflakeTest::start_registry();
my $old_table = q{
CREATE TABLE public.snowflake_registry (
    datacenter_id        integer     NOT NULL,
    worker_id            integer     NOT NULL,
    system_identifier    numeric(20) NOT NULL,
    timeline             bigint      NOT NULL,
    host                 text        NOT NULL,
    data_directory       text        NOT NULL,
    cluster_name         text        NOT NULL,
    claimed_at           timestamptz NOT NULL,
    renewed_at           timestamptz NOT NULL,
    expires_at           timestamptz NOT NULL,
    ids_before           timestamptz NOT NULL,
    inherited_ids_before timestamptz,
    PRIMARY KEY (datacenter_id, worker_id)
);
-- A row a node of 1.6 wrote, and one an administrator reserved.
INSERT INTO public.snowflake_registry VALUES
    (0, 1, 0, 0, 'legacy-db:5432', '/srv/legacy', 'legacy', now(), now(), 'infinity', now(), NULL);
};
$registry->safe_psql('postgres', q{
CREATE ROLE snowflake_node LOGIN;
CREATE DATABASE by_admin;
CREATE DATABASE by_node OWNER snowflake_node;
});
$registry->safe_psql('by_admin',
	$old_table . 'GRANT SELECT, INSERT, UPDATE ON public.snowflake_registry TO snowflake_node;');
$registry->safe_psql('by_node',
	$old_table . 'ALTER TABLE public.snowflake_registry OWNER TO snowflake_node;');

(my $by_admin = $conninfo) =~ s/dbname=registry/dbname=by_admin/;
(my $by_node = $conninfo) =~ s/dbname=registry/dbname=by_node/;

my $node = SnowflakeTest::init_node(
	'node',
	datacenter_id => 1,
	worker_id => 2,
	conf => [
		"snowflake.registry = '$by_admin user=snowflake_node'",
		"snowflake.registry_lease = '3s'"
	]);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

## The administrator's table: the status says what to run ---------------------

SnowflakeTest::wait_for_registry($node,
	"last_error LIKE '%has no columns token and released (it was made by snowflake 1.6 or earlier)%'",
	'a table of 1.6 its role may not alter: the status says so');
my $error = SnowflakeTest::registry_status($node, 'last_error');
like($error,
	qr/as its owner, run: (ALTER TABLE public\.snowflake_registry ADD COLUMN IF NOT EXISTS token bigint NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS released boolean NOT NULL DEFAULT false) \(/,
	'the error gives the ALTER TABLE to run');
my ($alter) = $error =~ /as its owner, run: (ALTER TABLE .*? DEFAULT false) \(/;
is(SnowflakeTest::registry_status($node, 'state'), 'unreachable', 'no identity is held meanwhile');
$registry->safe_psql('by_admin', $alter);
SnowflakeTest::wait_for_registry($node, "state = 'held'",
	'once the owner ran it, the node claims its identity');
is( $registry->safe_psql('by_admin',
		'SELECT token <> 0 AND NOT released FROM public.snowflake_registry WHERE worker_id = 2'),
	't',
	'its row carries its token');
is( $registry->safe_psql('by_admin',
		'SELECT token || \' \' || released FROM public.snowflake_registry WHERE worker_id = 1'),
	'0 false',
	'the older row: no token, not released');

## The node's own table: the worker adds the columns --------------------------

SnowflakeTest::set_config($node, 'snowflake.registry' => "$by_node user=snowflake_node");
ok( $registry->poll_query_until('by_node',
		"SELECT count(*) = 1 FROM public.snowflake_registry WHERE worker_id = 2 AND token <> 0"),
	'a table of 1.6 its role owns: the worker adds the columns and claims');
like(slurp_file($node->logfile),
	qr/added the columns token and released to the registry table public\.snowflake_registry/,
	'the server log says so');
SnowflakeTest::wait_for_registry($node, "state = 'held'");

$node->stop('fast');
done_testing();
