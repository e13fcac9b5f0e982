# The registry unreachable (doc/registry.md, "When the registry is
# unreachable"): a node that holds a lease keeps issuing IDs until
#     (monotonic time it sent the last renewal the registry accepted)
#     + snowflake.registry_lease - snowflake.registry_lease / 10
# and then refuses; a node that never got a lease refuses at once; once the
# registry is back, both claim their identities and issue IDs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time);

my $LEASE_S = 9;

my ($registry, $conninfo) = SnowflakeTest::start_registry();
my @registry_conf = (
	"snowflake.registry = '$conninfo'",
	"snowflake.registry_lease = '${LEASE_S}s'");

my $steady = SnowflakeTest::init_node(
	'steady',
	datacenter_id => 1,
	worker_id => 1,
	conf => \@registry_conf);
SnowflakeTest::start_node($steady);
$steady->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($steady, "state = 'held'", 'holds its lease');

# The rule, as the node computed it: it stops issuing at least a tenth of the
# lease before the registry would let another node claim the identity (both
# clocks are this machine's here, so the two times compare).
my $valid_until = SnowflakeTest::registry_status($steady, 'valid_until');
my $expires_at = SnowflakeTest::registry_status($steady, 'expires_at');
is( $steady->safe_psql(
		'postgres',
		"SELECT '$valid_until'::timestamptz <= '$expires_at'::timestamptz - interval '${LEASE_S}s' / 10 + interval '50ms'"
	),
	't',
	'the node issues until at least a tenth of the lease before the registry lets it go');

## The registry stops: the node issues on its lease, then refuses ------------

my $before = $steady->safe_psql('postgres', 'SELECT snowflake_nextval()');
$registry->stop('fast');
my $stopped_at = time;
my $r = SnowflakeTest::try_sql($steady, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, undef, 'registry stopped: the node still issues IDs')
  or diag $r->{stderr};

SnowflakeTest::wait_for_registry($steady, 'last_error IS NOT NULL',
	'a renewal fails and is reported');
$r = SnowflakeTest::try_sql($steady,
	'SELECT state, snowflake_nextval() > 0 FROM snowflake_registry_status()');
is($r->{stdout}, 'held|t',
	'after a failed renewal the lease still holds and IDs are issued')
  or diag $r->{stderr};
like(SnowflakeTest::registry_status($steady, 'last_error'),
	qr/(lost the connection|could not connect) to the registry/,
	'status: the last error says why');

# A node that never held a lease refuses at once.
my $newcomer = SnowflakeTest::init_node(
	'newcomer',
	datacenter_id => 1,
	worker_id => 2,
	conf => \@registry_conf);
SnowflakeTest::start_node($newcomer);
$newcomer->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::wait_for_registry($newcomer, "state = 'unreachable'",
	'without a lease, reports the registry unreachable');
$r = SnowflakeTest::try_sql($newcomer, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'newcomer: refuses to issue IDs (55000)');
is( $r->{message},
	'the snowflake registry has not confirmed this node\'s identity',
	'newcomer: the error says the registry has not confirmed the identity');
like($r->{detail}, qr/could not connect to the registry/,
	'newcomer: the detail gives the connection error');
like($r->{hint}, qr/snowflake\.registry/, 'newcomer: the hint names the setting');

SnowflakeTest::wait_for_registry($steady, "state = 'expired'", 'the lease runs out');
my $expired_after = time - $stopped_at;
note sprintf('the lease ran out %.1f s after the registry stopped', $expired_after);
cmp_ok($expired_after, '<', $LEASE_S + 10,
	'it ran out within the lease (and the test\'s polling slack)');
$r = SnowflakeTest::try_sql($steady, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'lease expired: snowflake_nextval() refuses (55000)');
is( $r->{message},
	'snowflake identity lease for datacenter_id 1, worker_id 1 has expired',
	'lease expired: the error names the identity');
like(
	$r->{detail},
	qr/The registry last renewed it at .* \(registry clock\)\. A node issues IDs only until 8100 ms after it sent the last renewal the registry accepted/,
	'lease expired: the detail states the rule with the numbers');
like($r->{detail}, qr/Last registry error: could not connect/,
	'lease expired: the detail gives the registry error');

## The registry is back: both nodes claim and issue ---------------------------

$registry->start;
SnowflakeTest::wait_for_registry($steady, "state = 'held'", 'renews once the registry is back');
my $after = $steady->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($after, '>', $before, 'steady: issues IDs again, above the earlier ones');
is( $steady->safe_psql(
		'postgres', "SELECT datacenter_id || '/' || worker_id FROM snowflake_decode($after)"),
	'1/1',
	'steady: under its identity');
is(SnowflakeTest::registry_status($steady, 'last_error IS NULL'), 't', 'steady: the error is cleared');

SnowflakeTest::wait_for_registry($newcomer, "state = 'held'", 'claims once the registry is back');
$r = SnowflakeTest::try_sql($newcomer, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, undef, 'newcomer: issues IDs') or diag $r->{stderr};

$_->stop('fast') for ($steady, $newcomer);
done_testing();
