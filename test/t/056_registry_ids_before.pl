# The holder's cap (issue 13; doc/registry.md "Takeovers"): a node never
# returns an ID at or above the ids_before it reported with its last claim or
# renewal the registry accepted, because a node that takes its identity over
# starts there. A forward step of the wall clock past that limit (the lease,
# on the monotonic clock, is not moved by it) makes snowflake_nextval() refuse
# until the next renewal reports a later limit. This is the lowest layer that
# shows it: the check is in the glue, against the registry worker's shared
# state, and needs a real clock step (libfaketime).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my ($registry, $conninfo) = SnowflakeTest::start_registry();
my $node = SnowflakeTest::init_node(
	'node',
	datacenter_id => 1,
	worker_id => 4,
	faketime => 1,
	conf => [
		"snowflake.registry = '$conninfo'", "snowflake.registry_lease = '30s'",
		"snowflake.max_clock_backward_wait = 0"
	]);
SnowflakeTest::start_node($node);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($node, "state = 'held'");
ok(SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()')->{ok},
	'the holder issues IDs');

# Right after a renewal, so that the next one is a third of the lease away.
my $renewed = SnowflakeTest::registry_status($node, 'renewed_at');
SnowflakeTest::wait_for_registry($node, "renewed_at <> '$renewed'",
	'a renewal');
my $limit = SnowflakeTest::registry_row($registry, 1, 4,
	'floor(extract(epoch FROM ids_before) * 1000)::bigint');
SnowflakeTest::set_clock_offset($node, 60);

my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000',
	'clock 60 s ahead, past the reported ids_before (lease 30 s): refuses (55000)')
  or diag "returned $r->{stdout}";
is( $r->{message},
	'snowflake IDs have reached the limit this node reported to the registry',
	'the error says why');
like($r->{detail},
	qr/^The last renewal of datacenter_id 1, worker_id 4 the registry accepted promised IDs before /,
	'the detail gives the limit');
is(SnowflakeTest::registry_status($node, 'state'),
	'held', 'the lease itself is still held (its clock did not move)');

ok( $node->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'),
	'the next renewal raises the limit: the node issues again');
my $new_limit = SnowflakeTest::registry_row($registry, 1, 4,
	'floor(extract(epoch FROM ids_before) * 1000)::bigint');
cmp_ok($new_limit, '>=', $limit + 60_000, 'the registry row has the new limit');
my $id_ms = SnowflakeTest::id_ms($node, 'SELECT snowflake_nextval()');
cmp_ok($id_ms, '<', $new_limit, 'IDs stay below it');

$node->stop('fast');
done_testing();
