# pgBackRest (Debian's pgbackrest), the backup tool most PostgreSQL users run,
# with a real repository (issue 18, items 4 and 5). The original node runs an
# hour ahead of the real clock under snowflake.max_lead = '1d', so its IDs are
# an hour ahead too; every restored node runs on the real clock, which alone
# would issue those IDs again within the hour. Only the durable bound that
# the backup and the WAL carry keeps a restored node above them.
#
# 1. stanza-create and check; archive_command is pgbackrest archive-push; a
#    full backup. Its manifest lists pg_snowflake/state: pgBackRest excludes
#    only what it knows to be temporary (postmaster.pid, pg_stat_tmp/, ...).
# 2. Batch 1 (rows and IDs returned to clients only), a named restore point
#    and a time between the batches, batch 2.
# 3. Point-in-time restores to the time and to the restore point, promoted:
#    batch 2 is gone; the first ID is above every ID issued before the target;
#    the server log says nothing of a missing state file.
# 4. A restore of the backup with all the WAL: above every ID of both batches.
# 5. A backup made with --exclude=pg_snowflake/ and restored to its
#    consistency point (no bound in the WAL it replays): the replication
#    origin "snowflake_bound", which the backup carries
#    (pg_logical/replorigin_checkpoint), gives the bound, and the node issues
#    above every ID at once, saying where the bound came from. One that also
#    leaves out the origins' checkpoint (as a data directory of 1.7 has no
#    origin): the server log warns, naming the database; snowflake_nextval()
#    refuses (55000) until snowflake_restore_bound() reads the original's
#    state file, and then issues above every ID.
# 6. No pgbackrest process is left.
use strict;
use warnings FATAL => 'all';

use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();
# scripts/install-deps.sh installs it: its absence is a failure, not a skip.
die 'pgbackrest is not installed (scripts/install-deps.sh installs Debian\'s pgbackrest)'
  unless grep { -x "$_/pgbackrest" } split /:/, $ENV{PATH};

my $LEAD = 3600;    # seconds the original's clock runs ahead

## The repository and pgBackRest's own configuration ---------------------------

# Everything pgBackRest writes stays in the test's directory: the repository,
# its locks, logs and spool. The stanza's pg1-path and socket come later.
my $dir = PostgreSQL::Test::Utils::tempdir('pgbackrest');
my $config = "$dir/pgbackrest.conf";
my $repo = "$dir/repo";
mkdir "$dir/log" or die "mkdir: $!";    # pgBackRest writes log files only if log-path exists

my $original = SnowflakeTest::init_node(
	'original',
	faketime => 1,
	allows_streaming => 1,
	conf => [
		"snowflake.max_lead = '1d'",
		'archive_mode = on',
		"archive_command = 'pgbackrest --config=$config --stanza=main archive-push %p'",
	]);

append_to_file(
	$config, qq{[global]
repo1-path=$repo
repo1-retention-full=4
lock-path=$dir/lock
log-path=$dir/log
spool-path=$dir/spool
log-level-console=warn
log-level-file=info
log-level-stderr=warn
start-fast=y
compress-type=lz4
archive-timeout=60

[main]
pg1-path=${\ $original->data_dir }
pg1-port=${\ $original->port }
pg1-socket-path=${\ $original->host }
});

# Runs pgbackrest with this test's configuration and the stanza; dies with
# its output if it fails. Returns its standard output.
sub pgbackrest
{
	my @arguments = @_;
	my ($stdout, $stderr) = ('', '');
	note "pgbackrest @arguments";
	my $ok = IPC::Run::run(
		[ 'pgbackrest', "--config=$config", '--stanza=main', @arguments ],
		'<', '/dev/null', '>', \$stdout, '2>', \$stderr,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	die "pgbackrest @arguments failed:\n$stdout$stderr" unless $ok;
	return $stdout;
}

# The label of the newest backup in the repository.
sub newest_backup
{
	my $info = decode_json(pgbackrest('info', '--output=json'));
	return $info->[0]{backup}[-1]{label};
}

sub manifest { return slurp_file("$repo/backup/main/$_[0]/backup.manifest"); }

# A node restored by pgbackrest into a new data directory (with @options:
# --set, --type, --target...), with its own port and socket and no
# archiving; not started. It runs on the real clock.
sub restore_node
{
	my ($name, @options) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	mkdir $node->data_dir, 0700 or die "mkdir: $!";
	pgbackrest('--pg1-path=' . $node->data_dir, @options, 'restore');
	$node->append_conf('postgresql.conf',
		"port = ${\ $node->port }\nunix_socket_directories = '${\ $node->host }'\narchive_mode = off");
	SnowflakeTest::remember_node($node);
	return $node;
}

sub start_promoted
{
	my ($node) = @_;
	$node->start;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die $node->name . ' was not promoted';
	return;
}

# IDs issued on $node: $rows rows of orders in batch $batch, then $returned
# IDs returned to a client and stored nowhere. Returns the highest of all.
sub issue_batch
{
	my ($node, $batch, $rows, $returned) = @_;
	$node->safe_psql('postgres',
		"INSERT INTO orders (batch) SELECT $batch FROM generate_series(1, $rows)");
	$node->safe_psql('postgres',
		"SELECT count(snowflake_nextval()) FROM generate_series(1, $returned)");
	return $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
}

## 1. The stanza, archiving, a full backup -------------------------------------

IPC::Run::run([ 'pgbackrest', 'version' ], '>', \my $version);
chomp $version;
note "this is $version";

SnowflakeTest::set_clock_offset($original, $LEAD);
SnowflakeTest::start_node($original);
pgbackrest('stanza-create');
pgbackrest('check');
$original->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), batch int NOT NULL);
});
my $before_backup = issue_batch($original, 0, 100, 100);

pgbackrest('backup', '--type=full');
my $full = newest_backup();
my $manifest = manifest($full);
like($manifest, qr{^pg_data/pg_snowflake/state=\{[^\n]*"size":64}m,
	'the full backup carries pg_snowflake/state');
like($manifest, qr{^pg_data/pg_logical/replorigin_checkpoint=\{}m,
	'and the replication origins\' checkpoint, with the second copy of the bound');
like($manifest, qr{^pg_data/pg_snowflake=\{}m, 'and the directory pg_snowflake/');
unlike($manifest, qr{^pg_data/(postmaster\.pid|pg_stat_tmp/\S)}m,
	'pgBackRest excludes what it knows to be temporary (postmaster.pid, pg_stat_tmp/)');

## 2. Two batches, and the targets between them --------------------------------

my $highest_1 = issue_batch($original, 1, 1000, 500);
my $lowest_1 = $original->safe_psql('postgres', 'SELECT min(id) FROM orders WHERE batch = 1');
$original->safe_psql('postgres', "SELECT pg_create_restore_point('between_batches')");
usleep(100_000);
my $target_time = $original->safe_psql('postgres', 'SELECT clock_timestamp()');
usleep(100_000);
my $highest_2 = issue_batch($original, 2, 1000, 500);
my $segment =
  $original->safe_psql('postgres', 'SELECT pg_walfile_name(pg_switch_wal())');
$original->poll_query_until('postgres',
	"SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver")
  or die "WAL segment $segment was not archived";
cmp_ok($highest_1, '>', $before_backup, 'batch 1 is above the IDs before the backup');
cmp_ok($highest_2, '>', $highest_1, 'batch 2 is above batch 1');

## 3. Point-in-time restores -----------------------------------------------------

for my $target (
	[ 'time', '--type=time', "--target=$target_time" ],
	[ 'restore point', '--type=name', '--target=between_batches' ])
{
	my ($label, @target) = @$target;
	(my $name = "pitr_$label") =~ s/ /_/g;
	my $node = restore_node($name, "--set=$full", @target, '--target-action=promote');
	ok(-f $node->data_dir . '/pg_snowflake/state',
		"$label: the restore brings pg_snowflake/state back");
	start_promoted($node);
	is( $node->safe_psql('postgres', 'SELECT batch, count(*) FROM orders GROUP BY 1 ORDER BY 1'),
		"0|100\n1|1000",
		"$label: recovered to between the batches (batch 2 is gone)");
	is( $node->safe_psql('postgres', "SELECT snowflake_min_id(clock_timestamp()) < $lowest_1"),
		't', "$label: its clock alone would issue batch 1's IDs again");
	my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
	cmp_ok($first, '>', $highest_1,
		"$label: its first ID is above every ID issued before the target");
	is( $node->safe_psql(
			'postgres',
			"INSERT INTO orders (batch) SELECT 3 FROM generate_series(1, 1000); SELECT count(*), count(DISTINCT id) FROM orders"
		),
		'2100|2100',
		"$label: new rows collide with none");
	is(SnowflakeTest::snowflake_log_lines($node), '',
		"$label: the server log says nothing about snowflake but its WAL resource manager");
	$node->stop;
}

## 4. The latest: the backup and all the WAL --------------------------------------

my $latest = restore_node('latest', "--set=$full");
start_promoted($latest);
is( $latest->safe_psql('postgres', 'SELECT batch, count(*) FROM orders GROUP BY 1 ORDER BY 1'),
	"0|100\n1|1000\n2|1000",
	'latest: every committed row is back');
cmp_ok($latest->safe_psql('postgres', 'SELECT snowflake_nextval()'),
	'>', $highest_2, 'latest: its first ID is above every ID of both batches');
is(SnowflakeTest::snowflake_log_lines($latest), '',
	'latest: the server log says nothing about snowflake but its WAL resource manager');
$latest->stop;

## 5. A backup without pg_snowflake/ -----------------------------------------------

my $said = pgbackrest('backup', '--type=full', '--exclude=pg_snowflake/');
my $carried = restore_node('carried', '--set=' . newest_backup(), '--type=immediate',
	'--target-action=promote');
ok(!-e $carried->data_dir . '/pg_snowflake/state', 'excluded, the origin kept: no state file');
start_promoted($carried);
my $r = SnowflakeTest::try_sql($carried, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, undef, 'excluded, the origin kept: it issues IDs') or diag $r->{stderr};
cmp_ok($r->{stdout}, '>', $highest_2, 'excluded, the origin kept: above every ID the original issued');
ok( $carried->log_contains(
		qr/WARNING:  snowflake: took the bound above this data directory's IDs from the replication origin "snowflake_bound"/
	),
	'excluded, the origin kept: the server log says where the bound came from');
$carried->stop;

$said = pgbackrest('backup', '--type=full', '--exclude=pg_snowflake/',
	'--exclude=pg_logical/replorigin_checkpoint', '--log-level-console=info');
like($said, qr{INFO: exclude contents of '\S+/pg_snowflake' from backup using 'pg_snowflake/' exclusion},
	'--exclude=pg_snowflake/: pgBackRest says what it leaves out');
my $excluded = newest_backup();
unlike(manifest($excluded), qr{^pg_data/pg_snowflake/state=}m,
	'--exclude=pg_snowflake/: the backup has no state file');

my $bare = restore_node('bare', "--set=$excluded", '--type=immediate', '--target-action=promote');
ok(!-e $bare->data_dir . '/pg_snowflake/state', 'excluded: the restore has no state file');
start_promoted($bare);
ok( $bare->wait_for_log(
		qr/WARNING:  snowflake: pg_snowflake\/state was missing at start, yet the extension is in database "postgres"/
	),
	'excluded: the server log warns, naming what was missing and where the extension is');
$r = SnowflakeTest::try_sql($bare, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, '55000', 'excluded: snowflake_nextval() refuses (55000)');
like($r->{message}, qr/the bound above this node's earlier snowflake IDs is unknown/,
	'excluded: the error says the bound is unknown');
like($r->{hint} // '', qr/snowflake_restore_bound\('.*snowflake_set_bound\(now\(\)\)/,
	'excluded: the hint gives the commands that fix it');
$r = SnowflakeTest::try_sql($bare,
	"SELECT snowflake_restore_bound('" . $original->data_dir . "') IS NOT NULL; SELECT snowflake_nextval()");
ok($r->{ok}, 'excluded: snowflake_restore_bound() with the original\'s data directory')
  or diag $r->{stderr};
cmp_ok((split /\n/, $r->{stdout})[-1], '>', $highest_2,
	'excluded: then its first ID is above every ID the original issued');
$bare->stop;

## 6. Nothing left running ----------------------------------------------------------

$original->stop;
my @left = grep {
	my $cmdline = eval { slurp_file("/proc/$_/cmdline") } // '';
	$cmdline =~ /pgbackrest/ && index($cmdline, $config) >= 0
} grep { /^\d+$/ } map { s{^/proc/}{}r } glob('/proc/[0-9]*');
is(scalar @left, 0, 'no pgbackrest process is left') or diag "left: @left";

done_testing();
