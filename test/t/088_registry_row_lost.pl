# A registry that loses rows or its table without another timeline or system
# identifier (issue 44 item 3): what the nodes see, and that no ID is issued
# twice. Node A holds datacenter_id 2, worker_id 3; node B (another system,
# configured with the same identity) is refused and watches A's row.
#
#  1. The holder finds its own row gone (an administrator's DELETE): A's
#     renewal inserts it. A warns that the registry's history changed, keeps
#     its lease, and skips the gap: its IDs below its cap of the moment go on,
#     none between that cap and the floor (a lease after the change).
#  2. A's row deleted while A's registry worker is held up (its backends
#     issue under the lease they have) and B watches it: B's claim finds the
#     row it saw gone, and starts a lease after that, not at its clock, which
#     is A's. A, resumed, is fenced.
#  3. The registry table restored from a dump taken in part 1 (a DROP TABLE
#     and the dump in one transaction), while B holds and its worker is held
#     up: the table has another OID, A's old row expired in it. A takes it
#     over above the floor of the change, not at B's dumped ids_before.
#  4. B restarted after the registry's database was dropped and made again
#     while B was down: it remembers the table it saw (pg_snowflake/registry)
#     and warns at its first answer, its claims starting at the floor.
# No ID is issued by both nodes.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time usleep);

my ($DATACENTER, $WORKER) = (2, 3);
my $LEASE_MS = 6000;
my ($registry, $conninfo) = SnowflakeTest::start_registry();
my @conf = ("snowflake.registry = '$conninfo'", "snowflake.registry_lease = '${LEASE_MS}ms'");
my $HISTORY = qr/WARNING:  the snowflake registry's history changed/;

sub row { return SnowflakeTest::registry_row($registry, $DATACENTER, $WORKER, @_); }

sub warnings_of
{
	my ($node) = @_;
	my @all = slurp_file($node->logfile) =~ /$HISTORY/g;
	return scalar @all;
}

sub signal_worker
{
	my ($node, $signal) = @_;
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'");
	kill $signal, $pid or die "kill $signal $pid: $!";
	return;
}

# 200 IDs a call, as many calls as succeed in `seconds`: the number that did.
sub issue_for
{
	my ($node, $b, $seconds) = @_;
	my $done = 0;
	my $until = time + $seconds;
	while (time < $until)
	{
		my $r = SnowflakeTest::try_sql($node,
			"INSERT INTO ids SELECT $b, (SELECT coalesce(max(g), 0) FROM ids WHERE b = $b) + g, "
			  . 'snowflake_nextval() FROM generate_series(1, 200) g');
		$done++ if $r->{ok};
		usleep(50_000);
	}
	return $done;
}

my %nodes;
for my $name ('a', 'b')
{
	my $node = SnowflakeTest::init_node($name,
		datacenter_id => $DATACENTER, worker_id => $WORKER, conf => \@conf);
	SnowflakeTest::start_node($node);
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	SnowflakeTest::create_id_writers($node);
	$nodes{$name} = $node;
	SnowflakeTest::wait_for_registry($node, $name eq 'a' ? "state = 'held'" : "state = 'conflict'");
}
my ($a, $b) = @nodes{ 'a', 'b' };
my $dump = PostgreSQL::Test::Utils::tempdir() . '/registry.sql';
$registry->command_ok(
	[ 'pg_dump', '--table', 'public.snowflake_registry', '--file', $dump, '--dbname', 'registry' ],
	'the registry table dumped');

## 1. The holder finds its own row gone ----------------------------------------

# B held up meanwhile, so that A's renewal is the claim that finds the row gone.
signal_worker($b, 'STOP');
my $ms = "floor(extract(epoch FROM (snowflake_decode(id)).ts) * 1000)::bigint";
$registry->safe_psql('registry',
	"DELETE FROM snowflake_registry WHERE datacenter_id = $DATACENTER AND worker_id = $WORKER");
ok($a->poll_query_until('postgres',
		"SELECT state = 'held' AND registry_history_changed_at IS NOT NULL FROM snowflake_registry_status()"),
	'A: renews (its renewal inserts the row) and sees the history change');
my ($floor_text, $cap_text) = slurp_file($a->logfile) =~
  qr/$HISTORY: its row of datacenter_id $DATACENTER, worker_id $WORKER is gone, which this node saw renewed at .*\n.*DETAIL.*\n.*HINT:  .* This node starts every identity it claims from now on at (.*) or later; under the lease it holds on datacenter_id $DATACENTER, worker_id $WORKER, it issues no ID from (.*) \(its limit when it saw the change\) to then\./;
ok(defined $cap_text, 'A: the WARNING says its row is gone, and names the gap') or diag SnowflakeTest::log_tail($a);
like(row('host'), qr/:${\ $a->port }$/, 'the row is A\'s again');
cmp_ok(issue_for($a, 1, $LEASE_MS / 1000 + 3), '>', 0, 'A issues on');
my $to_ms = sub { $a->safe_psql('postgres', "SELECT floor(extract(epoch FROM '$_[0]'::timestamptz) * 1000)::bigint") };
my ($cap, $floor) = ($to_ms->($cap_text), $to_ms->($floor_text));
is($a->safe_psql('postgres', "SELECT count(*) FROM ids WHERE b = 1 AND $ms >= $cap AND $ms < $floor"),
	'0', 'A: no ID from its cap of the moment to the floor');
cmp_ok($a->safe_psql('postgres', "SELECT count(*) FROM ids WHERE b = 1 AND $ms < $cap"),
	'>', 0, 'A: IDs below its cap, after the change');
cmp_ok($a->safe_psql('postgres', "SELECT count(*) FROM ids WHERE b = 1 AND $ms >= $floor"),
	'>', 0, 'A: IDs above the floor, after the gap');
signal_worker($b, 'CONT');

## 2. A's row deleted while B watches it --------------------------------------

my @writers = SnowflakeTest::start_writers($a, 2, batch => 20, max_batches => 10_000_000, first => 10);
$a->poll_query_until('postgres', 'SELECT count(*) > 3000 FROM ids WHERE b >= 10')
  or die 'A issues no IDs';
signal_worker($a, 'STOP');
my $b_warnings = warnings_of($b);
$registry->safe_psql('registry',
	"DELETE FROM snowflake_registry WHERE datacenter_id = $DATACENTER AND worker_id = $WORKER");
SnowflakeTest::wait_for_registry($b, "state = 'held'", 'B claims the row it saw gone');
is(warnings_of($b), $b_warnings + 1, 'B: a WARNING');
like(slurp_file($b->logfile), qr/$HISTORY: its row of datacenter_id $DATACENTER, worker_id $WORKER is gone/,
	'B: it says the row it watched is gone');
like(slurp_file($b->logfile),
	qr/LOG:  snowflake registry: claiming datacenter_id $DATACENTER, worker_id $WORKER above /,
	'B: claims above the floor');
# While A's backends still issue under their lease (1.7: B issued at once).
issue_for($b, 100, 2);
signal_worker($a, 'CONT');
SnowflakeTest::wait_for_registry($a, "state = 'conflict'", 'A, resumed, is fenced');
SnowflakeTest::stop_writers($a, @writers);

## 3. The registry table restored from a dump -----------------------------------

# B issues once its clock has reached the floor; then, its worker held up and
# its backends issuing under their lease, the table is replaced by the dump
# of part 1, where A's row has expired.
ok($b->poll_query_until('postgres', 'SELECT snowflake_nextval() > 0'), 'B issues above the floor');
@writers = SnowflakeTest::start_writers($b, 2, batch => 20, max_batches => 10_000_000, first => 110);
$b->poll_query_until('postgres', 'SELECT count(*) > 3000 FROM ids WHERE b >= 110')
  or die 'B issues no IDs';
signal_worker($b, 'STOP');
my $restore = PostgreSQL::Test::Utils::tempdir() . '/restore.sql';
append_to_file($restore, "DROP TABLE public.snowflake_registry;\n" . slurp_file($dump));
my $oid_before = $registry->safe_psql('registry', "SELECT 'snowflake_registry'::regclass::oid");
$registry->command_ok(
	[
		'psql', '--no-psqlrc', '--quiet', '--set', 'ON_ERROR_STOP=1',
		'--single-transaction', '--file', $restore, '--dbname', 'registry'
	],
	'the dump of the registry table restored over it');
my $oid_after = $registry->safe_psql('registry', "SELECT 'snowflake_registry'::regclass::oid");
isnt($oid_after, $oid_before, 'the restored table has another OID');
SnowflakeTest::wait_for_registry($a, "state = 'held'", 'A takes its old row of the dump over');
like(slurp_file($a->logfile),
	qr/$HISTORY: it is system identifier \d+, timeline 1, table OID $oid_after, and was system identifier \d+, timeline 1, table OID $oid_before/,
	'A: the WARNING names the two tables');
like(slurp_file($a->logfile),
	qr/LOG:  snowflake registry: claiming datacenter_id $DATACENTER, worker_id $WORKER above .*, as the registry's history changed at/,
	'A: claims above the floor of the change');
issue_for($a, 2, 2);
signal_worker($b, 'CONT');
SnowflakeTest::wait_for_registry($b, "state = 'conflict'", 'B, resumed, is fenced');
SnowflakeTest::stop_writers($b, @writers);

## 4. B restarted after the registry's database was made again ------------------

$b->stop('fast');
$registry->safe_psql('postgres', 'DROP DATABASE registry WITH (FORCE); CREATE DATABASE registry');
ok( $registry->poll_query_until('registry',
		"SELECT to_regclass('public.snowflake_registry') IS NOT NULL"),
	'the worker made the table again');
ok( $registry->poll_query_until('registry',
		'SELECT count(*) = 1 FROM snowflake_registry'),
	'A holds in the table made again');
my $new_oid = $registry->safe_psql('registry', "SELECT 'snowflake_registry'::regclass::oid");
SnowflakeTest::start_node($b);
SnowflakeTest::wait_for_registry($b, "state = 'conflict'", 'B started again: refused');
ok($b->poll_query_until('postgres',
		'SELECT registry_history_changed_at > pg_postmaster_start_time() FROM snowflake_registry_status()'),
	'B: registry_history_changed_at is set after its restart');
like(slurp_file($b->logfile),
	qr/$HISTORY: it is system identifier \d+, timeline 1, table OID $new_oid, and was system identifier \d+, timeline 1, table OID $oid_after/,
	'B: at its first answer after the restart, the WARNING names the table it remembers');

## Every ID, once ---------------------------------------------------------------

my $ids = $b->safe_psql('postgres', 'SELECT id FROM ids');
$a->safe_psql('postgres', 'CREATE TABLE b_ids (id bigint)');
my @ids = grep { length } split /\n/, $ids;
while (my @part = splice(@ids, 0, 5000))
{
	$a->safe_psql('postgres', 'INSERT INTO b_ids VALUES (' . join('), (', @part) . ')');
}
my $b_count = $a->safe_psql('postgres', 'SELECT count(*) FROM b_ids');
cmp_ok($b_count, '>', 0, "B issued IDs ($b_count)");
is($a->safe_psql('postgres', 'SELECT count(*) FROM ids JOIN b_ids USING (id)'),
	'0', 'no ID issued by both A and B');
SnowflakeTest::check_ids($a, 'ids', 'A');
SnowflakeTest::check_ids($b, 'ids', 'B');
$a->stop('fast');
$b->stop('fast');
done_testing();
