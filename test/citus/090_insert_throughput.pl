# Insert throughput in a Citus cluster, with snowflake keys and without
# (bigserial, which Citus gives each node a range of), through the coordinator
# and through the workers, side by side: pgbench, one single-row INSERT per
# transaction. Figures, not assertions (doc/citus.md quotes a run): the test
# only checks that every run completed and every key is distinct.
#
#   SNOWFLAKE_CITUS_BENCH_SECONDS  length of each pgbench run (default 5)
#   SNOWFLAKE_CITUS_BENCH_ROUNDS   rounds, interleaved; the median is shown
#                                  (default 1)
#
# The coordinator and two workers share this machine's cores, and the
# framework runs them with fsync off: the figures compare the paths and the
# keys, they are not what separate machines would do.
use strict;
use warnings;

use CitusTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $seconds = $ENV{SNOWFLAKE_CITUS_BENCH_SECONDS} // 5;
my $rounds = $ENV{SNOWFLAKE_CITUS_BENCH_ROUNDS} // 1;
my $clients = 4;

my $coordinator = CitusTest::init_node('coordinator', datacenter_id => 1, worker_id => 0);
my $worker_1 = CitusTest::init_node('worker_1', datacenter_id => 1, worker_id => 1);
my $worker_2 = CitusTest::init_node('worker_2', datacenter_id => 1, worker_id => 2);
CitusTest::start_cluster($coordinator, $worker_1, $worker_2);
$coordinator->safe_psql(
	'postgres', q{
CREATE EXTENSION snowflake;
SET citus.shard_count = 8;
CREATE TABLE keys_snowflake (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), payload text NOT NULL);
SELECT create_distributed_table('keys_snowflake', 'id');
CREATE TABLE keys_bigserial (id bigserial PRIMARY KEY, payload text NOT NULL);
SELECT create_distributed_table('keys_bigserial', 'id');
});

my $scripts = PostgreSQL::Test::Utils::tempdir('pgbench');
for my $key (qw(snowflake bigserial))
{
	append_to_file("$scripts/$key.sql", "INSERT INTO keys_$key (payload) VALUES ('row');\n");
}

# Starts pgbench with $count clients on $node; returns a handle for pgbench_tps.
sub start_pgbench
{
	my ($node, $key, $count) = @_;
	my ($out, $err) = ('', '');
	my @command = (
		'pgbench', '-n', '-M', 'prepared', '-c', $count, '-j', $count, '-T', $seconds,
		'-f', "$scripts/$key.sql", '-h', $node->host, '-p', $node->port, 'postgres');
	return { run => IPC::Run::start(\@command, '>', \$out, '2>', \$err), out => \$out, err => \$err };
}

sub pgbench_tps
{
	my ($handle) = @_;
	$handle->{run}->finish;
	my $ok = $? == 0;
	ok($ok, 'pgbench completed') or diag ${ $handle->{err} };
	my ($tps) = ${ $handle->{out} } =~ /^tps = ([\d.]+)/m;
	my ($failed) = ${ $handle->{out} } =~ /^number of failed transactions: (\d+)/m;
	is($failed // 0, 0, 'no failed transaction');
	return $tps // 0;
}

# The paths: all clients on the coordinator, or half on each worker.
my %runs = (
	coordinator => sub { my ($key) = @_; return [ start_pgbench($coordinator, $key, $clients) ]; },
	workers => sub {
		my ($key) = @_;
		return [ map { start_pgbench($_, $key, $clients / 2) } ($worker_1, $worker_2) ];
	},);

my %tps;    # "path key" => [tps per round]
my $load_before = `cat /proc/loadavg`;
for my $round (1 .. $rounds)
{
	for my $path (qw(coordinator workers))
	{
		# Alternate which key goes first, so that neither always runs on a
		# warmer cluster.
		my @keys = $round % 2 ? qw(snowflake bigserial) : qw(bigserial snowflake);
		for my $key (@keys)
		{
			my $total = 0;
			$total += pgbench_tps($_) for @{ $runs{$path}->($key) };
			push @{ $tps{"$path $key"} }, $total;
		}
	}
}
my $load_after = `cat /proc/loadavg`;

sub median
{
	my @sorted = sort { $a <=> $b } @_;
	return $sorted[ int($#sorted / 2) ] if @sorted % 2;
	return ($sorted[ @sorted / 2 - 1 ] + $sorted[ @sorted / 2 ]) / 2;
}

for my $key (qw(snowflake bigserial))
{
	my ($rows, $distinct) = split /\|/,
	  $coordinator->safe_psql('postgres', "SELECT count(*), count(DISTINCT id) FROM keys_$key");
	is($distinct, $rows, "keys_$key: all $rows keys distinct");
}

my $version = $coordinator->safe_psql('postgres',
	q{SELECT split_part(version(), ' ', 2) || ', Citus ' || extversion FROM pg_extension WHERE extname = 'citus'});
my @report = (
	"Insert throughput, PostgreSQL $version: pgbench -M prepared, $clients clients, one single-row INSERT per transaction,",
	"$seconds s per run, median of $rounds interleaved round(s); load average before: "
	  . (split ' ', $load_before)[0] . ', after: ' . (split ' ', $load_after)[0],
	'',
	'| clients connected to | snowflake_nextval() | bigserial | snowflake / bigserial |',
	'| --- | ---: | ---: | ---: |');
for my $path (qw(coordinator workers))
{
	my $snowflake = median(@{ $tps{"$path snowflake"} });
	my $bigserial = median(@{ $tps{"$path bigserial"} });
	push @report,
	  sprintf('| %s | %.0f tps | %.0f tps | %.2f |',
		$path eq 'coordinator' ? "the coordinator ($clients)" : 'the workers (' . $clients / 2 . ' each)',
		$snowflake, $bigserial, $bigserial ? $snowflake / $bigserial : 0);
}
diag join("\n", @report);

$_->stop('fast') for ($worker_2, $worker_1, $coordinator);
done_testing();
