# The registry's settings (doc/registry.md, "The settings, on every node"):
# snowflake.registry and snowflake.registry_lease take effect on reload, in
# both directions (a call right after the reload waits for the first claim); a
# connection string that does not parse is refused by ALTER SYSTEM and stops
# the server at start (rather than starting it without the registry); only
# superusers read the connection string, and snowflake_registry_status() is
# for superusers and pg_monitor.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my ($registry, $conninfo) = SnowflakeTest::start_registry();

sub issued_identity
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT datacenter_id || '/' || worker_id FROM snowflake_decode(snowflake_nextval())");
}

my $node = SnowflakeTest::init_node('node', datacenter_id => 4, worker_id => 4);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
is(SnowflakeTest::registry_status($node, 'in_use, state'), 'f|disabled', 'no registry: status says disabled');
is(issued_identity($node), '4/4', 'no registry: issues IDs of the configured identity');

## Permissions ----------------------------------------------------------------

$node->safe_psql('postgres', 'CREATE ROLE app LOGIN; CREATE ROLE watcher LOGIN IN ROLE pg_monitor');
my $r = SnowflakeTest::try_sql($node, 'SET ROLE app; SHOW snowflake.registry');
is($r->{sqlstate}, '42501', 'an ordinary role cannot read snowflake.registry');
$r = SnowflakeTest::try_sql($node, 'SET ROLE app; SET snowflake.registry = \'\'');
is($r->{sqlstate}, '55P02', 'nor set it in a session');
$r = SnowflakeTest::try_sql($node,
	'SET ROLE app; SELECT * FROM snowflake_registry_status()');
is($r->{sqlstate}, '42501', 'an ordinary role cannot call snowflake_registry_status()');
$r = SnowflakeTest::try_sql($node,
	'SET ROLE watcher; SELECT state FROM snowflake_registry_status()');
is($r->{stdout}, 'disabled', 'a member of pg_monitor can') or diag $r->{stderr};

## Values refused ---------------------------------------------------------------

$r = SnowflakeTest::try_sql($node,
	"ALTER SYSTEM SET snowflake.registry = 'host=x nonsense'");
is($r->{sqlstate}, '22023', 'ALTER SYSTEM refuses a connection string that does not parse');
is( $r->{message},
	'invalid value for parameter "snowflake.registry": "host=x nonsense"',
	'the error names the setting');
like($r->{detail}, qr/not a valid libpq connection string: missing "=" after "nonsense"/,
	'the detail gives libpq\'s reason');
$r = SnowflakeTest::try_sql($node,
	"ALTER SYSTEM SET snowflake.registry_lease = '500ms'");
is($r->{sqlstate}, '22023', 'a lease under 1 s is refused');
# PostgreSQL 17 and later print the range with its unit.
my $ms = $node->pg_version >= 17 ? ' ms' : '';
like($r->{message}, qr/outside the valid range .* \(1000$ms \.\. 3600000$ms\)/,
	'the error gives the range');

## A reload never shows the connection string to a session -------------------

# The configuration file may hold what ALTER SYSTEM refuses. Each backend
# reports a reload's refusal to its client at DEBUG2, which any role may ask
# for; the message used to quote the whole value, password included.
$node->append_conf('postgresql.conf',
	"snowflake.registry = 'host=x password=sekrit nonsense'");
# The reload must reach the session during its sleep (a backend reloads
# between statements): 5 s, as a second was eaten by a loaded machine once.
my $watcher = SnowflakeTest::start_sql($node,
	"SET ROLE app;\nSET client_min_messages = debug5;\nSELECT pg_sleep(5);\nSELECT 1;",
	name => 'debug_watcher');
SnowflakeTest::backend_pid($node, 'debug_watcher');
$node->reload;
$r = SnowflakeTest::finish_sql($watcher);
like($r->{stderr}, qr/invalid value for parameter "snowflake.registry"/,
	'an unprivileged session at debug5 sees the reload refuse the value');
unlike($r->{stderr}, qr/sekrit/, 'but not the value, nor any part of it');
ok( $node->log_contains(
		qr/LOG:  invalid value for parameter "snowflake.registry"\n.*DETAIL:  It is not a valid libpq connection string: missing "=" after "nonsense"/
	),
	'the server log has libpq\'s reason (from the postmaster)');
ok(!$node->log_contains(qr/sekrit/), 'and the server log does not have the password either');
$node->adjust_conf('postgresql.conf', 'snowflake.registry', "''");
$node->reload;

## Reloads: on, another identity, automatic, off --------------------------------

SnowflakeTest::set_config(
	$node,
	'snowflake.registry' => $conninfo,
	'snowflake.registry_lease' => '5s');
# At once: the call waits (up to 5 s) for the worker's first claim.
$r = SnowflakeTest::try_sql($node,
	"SELECT datacenter_id || '/' || worker_id FROM snowflake_decode(snowflake_nextval())");
is($r->{stdout}, '4/4', 'right after the reload, a call waits for the first claim and issues')
  or diag $r->{stderr};
SnowflakeTest::wait_for_registry($node, "state = 'held'", 'registry set on reload: the node claims its identity');
is(SnowflakeTest::registry_status($node, "datacenter_id || '/' || worker_id"), '4/4', 'status: 4/4');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'snowflake registry'"),
	'1',
	'the worker shows in pg_stat_activity');
is(issued_identity($node), '4/4', 'issues IDs of 4/4 under the registry');
is( $registry->safe_psql(
		'registry',
		"SELECT expires_at - renewed_at FROM snowflake_registry WHERE datacenter_id = 4 AND worker_id = 4"
	),
	'00:00:05',
	'registry: the lease from snowflake.registry_lease');

SnowflakeTest::set_config($node, 'snowflake.worker_id' => 5);
SnowflakeTest::wait_for_registry($node, "state = 'held' AND worker_id = 5",
	'worker_id changed on reload: the node claims the new identity');
is(issued_identity($node), '4/5', 'issues IDs of 4/5');

SnowflakeTest::set_config($node, 'snowflake.worker_id' => -1);
SnowflakeTest::wait_for_registry($node, "state = 'held' AND automatic",
	'worker_id unset on reload: the node leases an identity automatically');
like(SnowflakeTest::registry_status($node, "datacenter_id || '/' || worker_id"),
	qr{^4/[45]$}, 'it prefers an identity it already holds in datacenter_id 4');

SnowflakeTest::set_config($node, 'snowflake.worker_id' => 6, 'snowflake.registry' => undef);
SnowflakeTest::wait_for_registry($node, "state = 'disabled'", 'registry reset on reload: disabled');
is(issued_identity($node), '4/6', 'issues IDs of the configured identity without a registry');

## At start, a connection string that does not parse stops the server ---------

$node->stop('fast');
$node->append_conf('postgresql.conf', "snowflake.registry = 'host=x nonsense'");
ok(!$node->start(fail_ok => 1), 'the server does not start with a bad snowflake.registry');
like(
	slurp_file($node->logfile),
	qr/FATAL:  invalid value for parameter "snowflake.registry"\n.*DETAIL:  It is not a valid libpq connection string: missing "=" after "nonsense" in connection info string\.\n/,
	'the log says why');

done_testing();
