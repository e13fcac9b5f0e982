# Automatic identities across a real network partition (issue 11, part 2;
# doc/high-availability.md, "The registry across network partitions").
#
# As 201_partition_cut.t, with snowflake.worker_id unset on both nodes
# (datacenter_id 5), and every identity of datacenter 5 but worker_id 0
# reserved by an administrator's row that never expires: A leases (5, 0), B
# finds none free. A is cut off while it issues IDs: it refuses at the latest
# 0.9 lease after the cut; B leases (5, 0) once A's lease has expired on the
# registry's clock, above every ID of A. The administrator then frees (5, 1);
# when the partition heals, A finds (5, 0) taken and leases (5, 1).
use strict;
use warnings;

use Netns;
use NetnsPostgres;
use PartitionDrill;
use RegistryTable;
use Test::More;
use Time::HiRes qw(time);

Netns::guard_process(100);

my $LEASE = 6;
my $DATACENTER = 5;

my $lab = Netns->new;
my ($registry, $conninfo) = PartitionDrill::registry($lab, 57020);
# The table as doc/registry.md creates it, and the reserved identities.
$registry->psql(RegistryTable::doc_statement('snowflake_registry'), dbname => 'registry');
$registry->psql(<<"SQL", dbname => 'registry');
INSERT INTO snowflake_registry
SELECT $DATACENTER, w, 0, 0, 'reserved:' || w, '/reserved', 'reserved', now(), now(), 'infinity', now(), NULL
FROM generate_series(1, 31) w;
SQL

my @conf = (
	"snowflake.registry = '$conninfo'",
	"snowflake.registry_lease = '${LEASE}s'",
	"snowflake.datacenter_id = $DATACENTER");
my $node_a = PartitionDrill::node($lab, 'a', 2, 57021, @conf);
PartitionDrill::wait_status($node_a, "state = 'held' AND automatic AND worker_id = 0", 10,
	'leases the one free identity, (5, 0)');
my $node_b = PartitionDrill::node($lab, 'b', 3, 57022, @conf);
PartitionDrill::wait_status($node_b, "state = 'exhausted'", 10, 'finds no free identity');
my $r = $node_b->try_psql('SELECT snowflake_nextval()');
is($r->{message}, 'no free snowflake identity in the registry', 'B: refuses, no free identity');
like($r->{detail}, qr/Every worker_id from 0 to 31 of datacenter_id $DATACENTER is leased by a live node/,
	'B: the detail says which identities it tried');

## The cut ----------------------------------------------------------------------

my $issuing_a = $node_a->start_psql('CALL issue(30, true)');
$node_a->poll('SELECT count(*) > 50 FROM issued', 10) or BAIL_OUT('A issues no IDs');
my $cut = time;
$lab->cut('a');
my $taking_b = $node_b->start_psql('CALL issue(30, false, 1)');

# Once a new connection from A hangs, no renewal of A reaches the registry: the
# row's lease is A's last. It is read now, before B may take the identity over
# (at the earliest 0.9 lease after A's last renewal, as in 201).
my $hang = PartitionDrill::tcp_hangs($lab, 'a', $lab->address('reg'), 57020);
cmp_ok($hang, '>=', 1.9, sprintf('cut: a new connection from A to the registry hangs (timed out after %.1f s)', $hang));
my ($expires, $holder) = split /\|/, PartitionDrill::registry_row($registry, $DATACENTER, 0,
	"extract(epoch FROM expires_at), host");
like($holder, qr/:57021$/, 'registry: (5, 0) is still A\'s when the cut is confirmed');

$r = NetnsPostgres::finish_psql($issuing_a);
ok($r->{ok}, 'A: the issuing loop ended on a refusal') or diag $r->{stderr};
my ($refused_at, $message) = split /\|/,
  $node_a->psql('SELECT extract(epoch FROM at), message FROM refused');
my ($last_id, $last_id_at, $after_cut) = split /\|/, $node_a->psql(
	"SELECT max(id), extract(epoch FROM snowflake_timestamp(max(id))),
	        count(*) FILTER (WHERE at > to_timestamp($cut)) FROM issued");
is($message, "snowflake identity lease for datacenter_id $DATACENTER, worker_id 0 has expired",
	'A: refused, its lease has expired');
cmp_ok($after_cut, '>', 0, "A: issued $after_cut IDs while cut, on its lease");
cmp_ok($last_id_at, '<=', $cut + 0.9 * $LEASE, 'A: no ID later than 0.9 lease after the cut');

$r = NetnsPostgres::finish_psql($taking_b);
ok($r->{ok}, 'B: the issuing loop ended') or diag $r->{stderr};
my ($first_at, $first_id, $b_count) = split /\|/,
  $node_b->psql('SELECT extract(epoch FROM min(at)), min(id), count(*) FROM issued');
cmp_ok($b_count, '>', 0, "B: leased (5, 0) and issued $b_count IDs");
cmp_ok($first_at, '>=', $expires, 'B: its first ID came after A\'s lease expired (registry clock)');
is($node_b->psql("SELECT datacenter_id || '/' || worker_id FROM snowflake_decode($first_id)"),
	"$DATACENTER/0", 'B: its IDs carry (5, 0)');
cmp_ok($first_id, '>', $last_id, 'B: its first ID is above every ID of A');

## An identity is freed; the partition heals ---------------------------------------

$registry->psql(
	"UPDATE snowflake_registry SET expires_at = now(), ids_before = now() WHERE datacenter_id = $DATACENTER AND worker_id = 1",
	dbname => 'registry');
my $healed = time;
$lab->heal('a');
PartitionDrill::wait_status($node_a, "state = 'held' AND worker_id = 1", 10,
	'finds (5, 0) taken and leases (5, 1)');
my $released = time - $healed;
my $a_next = $node_a->psql('SELECT snowflake_nextval()');
is($node_a->psql("SELECT datacenter_id || '/' || worker_id FROM snowflake_decode($a_next)"),
	"$DATACENTER/1", 'A: issues again, under (5, 1)');
like(PartitionDrill::registry_row($registry, $DATACENTER, 0, 'host'), qr/:57022$/,
	'registry: (5, 0) stays B\'s');
PartitionDrill::wait_status($node_b, "state = 'held' AND worker_id = 0", 5, 'still holds (5, 0)');

my %seen;
my $duplicates = grep { $seen{$_}++ } split /\n/,
  $node_a->psql('SELECT id FROM issued') . "\n$a_next\n" . $node_b->psql('SELECT id FROM issued');
is($duplicates, 0, 'no ID issued by both nodes (' . scalar(keys %seen) . ' IDs)');

diag sprintf('figures (lease %d s, automatic): cut -> A refuses: %.2f s; cut -> B issues under A\'s identity: %.2f s; '
	  . 'heal -> A issues under another identity: %.2f s',
	$LEASE, $refused_at - $cut, $first_at - $cut, $released);

$_->stop('fast') for ($node_a, $node_b, $registry);
done_testing();
